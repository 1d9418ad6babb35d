package telegram_test

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestPollingConflictIsASignal: 409 Conflict from getUpdates (another
// poller, e.g. a second replica during a failover) is logged as a warning
// and retried with a growing backoff, never a crash and never a storm;
// polling goes on and the next message arrives.
func TestPollingConflictIsASignal(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	const conflicts = 5
	for range conflicts {
		srv.FailNext("getUpdates", telegramtest.Failure{Code: 409})
	}
	core, logs := observer.New(zapcore.InfoLevel)
	a, err := telegram.New("default", baseConfig(srv), telegram.Options{
		Logger: zap.New(core), HTTPClient: srv.Client(),
		Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	run(t, a, rec.handle) // its stop fails the test if Run returned an error
	srv.DM(111, "after the conflict")
	rec.waitCalls(t, 1)

	if n := logs.FilterMessage("telegram getUpdates conflict: another poller or a webhook is active").Len(); n != conflicts {
		t.Errorf("%d conflict warnings, want %d", n, conflicts)
	}
	calls := srv.CallTimes("getUpdates")
	if len(calls) < conflicts+1 {
		t.Fatalf("%d getUpdates calls, want at least %d", len(calls), conflicts+1)
	}
	for i := 1; i <= conflicts; i++ {
		// Each retry waits at least the first backoff (jitter only adds).
		if gap := calls[i].Sub(calls[i-1]); gap < 20*time.Millisecond {
			t.Errorf("retry %d came %s after a 409, want a backoff", i, gap)
		}
	}
	if last, first := calls[conflicts].Sub(calls[conflicts-1]), calls[1].Sub(calls[0]); last <= first {
		t.Errorf("backoff did not grow: first retry after %s, last after %s", first, last)
	}
}
