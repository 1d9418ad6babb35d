package telegram_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

var errJournalDown = errors.New("journal unavailable")

// TestOffsetNeverSkipsUnacceptedUpdate: the handler accepts A, fails B;
// the daemon stops. A restarted adapter on the same offset store gets B
// (not A) again, and then C.
func TestOffsetNeverSkipsUnacceptedUpdate(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	dir := t.TempDir()
	store := telegram.FileOffsetStore(dir)

	uA, mA := srv.AddMessage(telegramtest.Message{ChatID: alice, Text: "A"})
	uB, mB := srv.AddMessage(telegramtest.Message{ChatID: alice, Text: "B"})

	rec1 := newRecorder()
	rec1.fail = func(in channels.Inbound, _ int) error {
		if in.Text == "B" {
			return errJournalDown
		}
		return nil
	}
	stop := run(t, newAdapter(t, srv, baseConfig(srv), store), rec1.handle)
	rec1.waitCalls(t, 3) // A, B, B again after backoff
	stop()

	if got := rec1.accepted(); len(got) != 1 || got[0].MessageID != id(mA) {
		t.Fatalf("first run accepted %+v, want only A", got)
	}
	off, err := store.Load(testCtx(t), "default")
	if err != nil || off != uB {
		t.Fatalf("persisted offset %d (%v), want %d: past A, not past B", off, err, uB)
	}
	if c := srv.Confirmed(); c > uB {
		t.Fatalf("Telegram was told offset %d, past the unaccepted update %d", c, uB)
	}
	if uA >= uB {
		t.Fatal("update ids not increasing")
	}

	uC, mC := srv.AddMessage(telegramtest.Message{ChatID: alice, Text: "C"})
	rec2 := newRecorder()
	run(t, newAdapter(t, srv, baseConfig(srv), store), rec2.handle)
	waitConfirmed(t, srv, uC)
	var got []string
	for _, in := range rec2.accepted() {
		got = append(got, in.MessageID)
	}
	if len(got) != 2 || got[0] != id(mB) || got[1] != id(mC) {
		t.Fatalf("second run accepted %v, want [B C] = [%d %d]", got, mB, mC)
	}
	b, err := os.ReadFile(filepath.Join(dir, "default.offset"))
	if err != nil || string(b) != id(uC+1)+"\n" {
		t.Fatalf("offset file %q (%v), want %d", b, err, uC+1)
	}
	if fi, err := os.Stat(filepath.Join(dir, "default.offset")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("offset file mode %v (%v), want 0600", fi.Mode(), err)
	}
}

// TestHandlerErrorRetriedInOrder: a failed update is retried before any
// later one is delivered; ErrRejected acknowledges.
func TestHandlerErrorRetriedInOrder(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	rec := newRecorder()
	failed := false
	rec.fail = func(in channels.Inbound, _ int) error {
		switch {
		case in.Text == "first" && !failed:
			failed = true
			return errJournalDown
		case in.Text == "spam":
			return channels.ErrRejected
		}
		return nil
	}
	run(t, newAdapter(t, srv, baseConfig(srv), nil), rec.handle)
	srv.DM(alice, "first")
	srv.DM(alice, "spam")
	u := srv.DM(alice, "second")
	waitConfirmed(t, srv, u)
	var got []string
	for _, in := range rec.accepted() {
		got = append(got, in.Text)
	}
	if want := []string{"first", "spam", "second"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if n := rec.callCount(); n != 4 {
		t.Errorf("handler called %d times, want 4", n)
	}
}

// TestPollingSurvivesConflictAndFlood: 409 and 429 from getUpdates are
// waited out, and the poller deletes a leftover webhook first.
func TestPollingSurvivesConflictAndFlood(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	srv.FailNext("getUpdates",
		telegramtest.Failure{Code: 409},
		telegramtest.Failure{Code: 429, RetryAfter: 1},
		telegramtest.Failure{Code: 502, Description: "Bad Gateway"})
	_, rec := startPolling(t, srv, baseConfig(srv))
	u := srv.DM(alice, "still there?")
	waitConfirmed(t, srv, u)
	if got := rec.accepted(); len(got) != 1 || got[0].Text != "still there?" {
		t.Fatalf("got %+v", got)
	}
	if n := srv.Calls("deleteWebhook"); n != 1 {
		t.Errorf("deleteWebhook called %d times, want 1", n)
	}
	if n := srv.Calls("getUpdates"); n < 4 {
		t.Errorf("getUpdates called %d times, want ≥ 4", n)
	}
}

func TestRunStopsPromptlyDuringLongPoll(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	cfg := baseConfig(srv)
	cfg.PollTimeoutSeconds = 50
	a := newAdapter(t, srv, cfg, nil)
	stop := run(t, a, newRecorder().handle)
	if err := srv.WaitCalls(testCtx(t), "getUpdates", 1); err != nil {
		t.Fatal(err)
	}
	stop() // fails the test if Run does not return
}

func TestRunRefusedToken(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	cfg := baseConfig(srv)
	cfg.Token = "999:wrong"
	a := newAdapter(t, srv, cfg, nil)
	err := a.Run(context.Background(), newRecorder().handle)
	var ae *telegram.APIError
	if !errors.As(err, &ae) || ae.Code != 401 {
		t.Fatalf("Run = %v, want a 401 APIError", err)
	}
	if strings.Contains(err.Error(), cfg.Token) {
		t.Errorf("error %q contains the token", err)
	}
}

func TestTransportErrorHidesToken(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	cfg := baseConfig(srv)
	cfg.APIRoot = "http://127.0.0.1:1" // nothing listens there
	a := newAdapter(t, srv, cfg, nil)
	err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: "1"}, Text: "x"})
	if err == nil || strings.Contains(err.Error(), cfg.Token) {
		t.Fatalf("Send error %v: want an error without the token", err)
	}
}
