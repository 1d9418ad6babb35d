package telegram_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Handler that records what it accepted; fail decides, per
// message, whether to refuse it with an error (nil: accept everything).
type recorder struct {
	mu    sync.Mutex
	got   []channels.Inbound // accepted, guarded by mu
	calls int                // every call, guarded by mu
	fail  func(in channels.Inbound, call int) error
	ch    chan struct{}
}

func newRecorder() *recorder { return &recorder{ch: make(chan struct{}, 1000)} }

func (r *recorder) handle(_ context.Context, in channels.Inbound) error {
	r.mu.Lock()
	r.calls++
	var err error
	if r.fail != nil {
		err = r.fail(in, r.calls)
	}
	if err == nil || errors.Is(err, channels.ErrRejected) {
		in.Time = time.Time{} // tests compare everything else
		r.got = append(r.got, in)
	}
	r.mu.Unlock()
	r.ch <- struct{}{}
	return err
}

func (r *recorder) accepted() []channels.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Inbound(nil), r.got...)
}

func (r *recorder) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// waitCalls waits until the handler was called n times in total.
func (r *recorder) waitCalls(t *testing.T, n int) {
	t.Helper()
	ctx := testCtx(t)
	for r.callCount() < n {
		select {
		case <-r.ch:
		case <-ctx.Done():
			t.Fatalf("handler called %d times, want %d", r.callCount(), n)
		}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// baseConfig points an account at the fake.
func baseConfig(srv *telegramtest.Server) telegram.Config {
	return telegram.Config{Token: srv.Token(), APIRoot: srv.URL, PollTimeoutSeconds: 1}
}

func newAdapter(t *testing.T, srv *telegramtest.Server, cfg telegram.Config, store telegram.OffsetStore) *telegram.Adapter {
	t.Helper()
	a, err := telegram.New("default", cfg, telegram.Options{
		Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(), OffsetStore: store,
		Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// run starts a.Run and returns a stop function (also registered as cleanup)
// that cancels it and waits for it to return.
func run(t *testing.T, a *telegram.Adapter, h channels.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// startPolling runs an adapter with cfg against srv and records inbounds.
func startPolling(t *testing.T, srv *telegramtest.Server, cfg telegram.Config) (*telegram.Adapter, *recorder) {
	t.Helper()
	rec := newRecorder()
	a := newAdapter(t, srv, cfg, nil)
	run(t, a, rec.handle)
	return a, rec
}

func waitConfirmed(t *testing.T, srv *telegramtest.Server, updateID int) {
	t.Helper()
	if err := srv.WaitConfirmed(testCtx(t), updateID); err != nil {
		t.Fatalf("update %d not acknowledged (confirmed offset %d): %v", updateID, srv.Confirmed(), err)
	}
}

func waitSent(t *testing.T, srv *telegramtest.Server, n int) []telegramtest.Sent {
	t.Helper()
	sent, err := srv.WaitSent(testCtx(t), n)
	if err != nil {
		t.Fatalf("waiting for %d sent messages (have %d): %v", n, len(sent), err)
	}
	return sent
}
