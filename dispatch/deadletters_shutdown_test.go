package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// TestResubmitDuringShutdownSaysShuttingDown: a resubmit asked while the
// daemon shuts down (the console still answers during the grace period)
// is refused with lanes.ErrClosed, which the API answers 503 "try again
// later" as it does every change refused then (it answered 500), and the
// letter stays failed, resubmittable after the restart.
func TestResubmitDuringShutdownSaysShuttingDown(t *testing.T) {
	h := newHarness(t, "", nil)
	giveUpMessage(t, h, in("tg", "36", "late"))
	dl := letters(t, h)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.d.Shutdown(ctx)
	if _, err := h.d.Resubmit(h.ctx, dl.ID); !errors.Is(err, lanes.ErrClosed) {
		t.Errorf("resubmit during shutdown: %v, want lanes.ErrClosed", err)
	}
	if ls := letters(t, h); len(ls) != 1 || ls[0].State != sessions.DeadFailed {
		t.Errorf("letters after the refused resubmit: %+v, want %s still failed", ls, dl.ID)
	}
}
