package dispatch

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
)

// floodErr is a platform's 429 with retry_after the adapter did not wait
// out itself (longer than its own cap: Telegram retry_after 120, a
// Discord hold past MaxRetryAfter).
type floodErr struct{ after time.Duration }

func (e floodErr) Error() string             { return "telegram: sendMessage: 429 Too Many Requests" }
func (e floodErr) RetryDelay() time.Duration { return e.after }
func (e floodErr) Answered() bool            { return true }

// rateWaits replaces rateLimitWait for a test: each wait is recorded and
// lasts until release is closed (or ctx ends).
type rateWaits struct {
	mu      sync.Mutex
	asked   []time.Duration
	release chan struct{}
}

func stubRateWaits(t *testing.T) *rateWaits {
	w := &rateWaits{release: make(chan struct{})}
	old := rateLimitWait
	rateLimitWait = func(ctx context.Context, d time.Duration) bool {
		w.mu.Lock()
		w.asked = append(w.asked, d)
		w.mu.Unlock()
		select {
		case <-w.release:
			return true
		case <-ctx.Done():
			return false
		}
	}
	t.Cleanup(func() { rateLimitWait = old })
	return w
}

func (w *rateWaits) waits() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.asked...)
}

// TestLongRateLimitWaitedOutInOrder: a reply the platform rate-limits for
// longer than the adapter waits (429 retry_after 120 s) is not given up:
// the outbox waits it out and delivers it, the session's next reply after
// it, while other chats are answered meanwhile (the wait holds no
// concurrency slot: here there is one).
func TestLongRateLimitWaitedOutInOrder(t *testing.T) {
	defer func(r []time.Duration) { sendRetries = r }(sendRetries)
	sendRetries = []time.Duration{time.Millisecond}
	waits := stubRateWaits(t)
	h := newHarness(t, "", nil, func(h *harness) {
		h.disp = func(o *Options) { o.Caps = map[lanes.Class]int{lanes.ClassMain: 1} }
	})
	var mu sync.Mutex
	limited := true
	h.tg.failSend = func(out channels.Outbound, i int) error {
		mu.Lock()
		defer mu.Unlock()
		if out.ChatID == "51" && limited {
			return floodErr{after: 120 * time.Second}
		}
		return nil
	}
	h.handle(in("tg", "51", "first"))
	eventually(t, "the rate-limit wait", func() bool { return len(waits.waits()) == 1 })
	h.handle(in("tg", "51", "second"))
	h.handle(in("tg", "52", "other chat"))
	eventually(t, "the other chat's answer", func() bool { return slices.Contains(h.tg.texts(), "re: other chat") })
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: other chat"}) {
		t.Fatalf("sent while chat 51 waits: %q", got)
	}
	mu.Lock()
	limited = false
	mu.Unlock()
	close(waits.release)
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: other chat", "re: first", "re: second"}) {
		t.Errorf("sent %q, want chat 51's replies in order after the wait", got)
	}
	if ls := letters(t, h); len(ls) != 0 {
		t.Errorf("dead letters: %+v", ls)
	}
	if got := waits.waits(); !slices.Equal(got, []time.Duration{120 * time.Second}) {
		t.Errorf("waits %v, want the platform's 120s once", got)
	}
}

// TestRateLimitPastBudgetGivenUp: a retry_after past the outbox's budget
// (rateLimitBudget) is not waited for: the reply is given up at once, kept
// as a dead letter for the operator.
func TestRateLimitPastBudgetGivenUp(t *testing.T) {
	waits := stubRateWaits(t)
	h := newHarness(t, "", nil)
	h.tg.failSend = func(out channels.Outbound, i int) error {
		return floodErr{after: rateLimitBudget + time.Second}
	}
	h.handle(in("tg", "53", "hello"))
	h.drained()
	ls := letters(t, h)
	if len(ls) != 1 || ls[0].Reply == nil {
		t.Fatalf("dead letters %+v, want the reply", ls)
	}
	if got := waits.waits(); len(got) != 0 {
		t.Errorf("waited %v for a limit past the budget", got)
	}
}

// TestRateLimitedReplySurvivesRestart: a stop while a reply waits out a
// rate limit (and the session's next message waits behind it) leaves both
// for the next start: the reply is sent once, from the outbox, then the
// next message is answered.
func TestRateLimitedReplySurvivesRestart(t *testing.T) {
	waits := stubRateWaits(t)
	m := &model{}
	h := newHarness(t, "", m)
	var mu sync.Mutex
	limited := true
	h.tg.failSend = func(out channels.Outbound, i int) error {
		mu.Lock()
		defer mu.Unlock()
		if limited {
			return floodErr{after: 120 * time.Second}
		}
		return nil
	}
	h.handle(in("tg", "54", "first"))
	eventually(t, "the rate-limit wait", func() bool { return len(waits.waits()) == 1 })
	h.handle(in("tg", "54", "second"))
	h.restart()
	mu.Lock()
	limited = false
	mu.Unlock()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: first", "re: second"}) {
		t.Errorf("sent %q, want each reply once, in order", got)
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (the stored reply is not generated again)", n)
	}
	if ls := letters(t, h); len(ls) != 0 {
		t.Errorf("dead letters: %+v", ls)
	}
}

// TestStopDuringRateLimitWaitStillDelivers: /stop while a reply waits out
// a rate limit cancels nothing already answered: the reply (and the one
// queued behind it) still goes out once the limit passed, and nothing is
// dead-lettered.
func TestStopDuringRateLimitWaitStillDelivers(t *testing.T) {
	waits := stubRateWaits(t)
	m := &model{reply: func(llm.Request) (string, error) { return "one§two", nil }}
	h := newHarness(t, "", m)
	var mu sync.Mutex
	limited := true
	h.tg.failSend = func(out channels.Outbound, i int) error {
		mu.Lock()
		defer mu.Unlock()
		if limited && i == 1 && !strings.HasPrefix(out.Text, "/") {
			return floodErr{after: 120 * time.Second}
		}
		return nil
	}
	h.handle(in("tg", "55", "first"))
	eventually(t, "the rate-limit wait", func() bool { return len(waits.waits()) == 1 })
	h.handle(in("tg", "55", "/stop"))
	eventually(t, "the wait begun again off the lane", func() bool { return len(waits.waits()) == 2 })
	mu.Lock()
	limited = false
	mu.Unlock()
	close(waits.release)
	h.drained()
	var got []string
	for _, s := range h.tg.sent() {
		if s.Out.ChatID == "55" && (s.Text == "one" || s.Text == "two") {
			got = append(got, s.Text)
		}
	}
	if !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("sent %q, want each part once", got)
	}
	if ls := letters(t, h); len(ls) != 0 {
		t.Errorf("dead letters: %+v", ls)
	}
}

// TestRateLimitedChatHoldsNoOtherChat: a Telegram 429 the adapter would
// wait out in place (retry_after within its MaxRetryAfter) is returned to
// the outbox of a reply sent on its lane (channels.ReturnRateLimits), which
// parks it outside the concurrency slot: with one slot, another chat is
// answered while the limited chat waits. The fake adapter waits in place
// as Telegram's does unless the context carries the mark.
func TestRateLimitedChatHoldsNoOtherChat(t *testing.T) {
	waits := stubRateWaits(t)
	h := newHarness(t, "", nil, func(h *harness) {
		h.disp = func(o *Options) { o.Caps = map[lanes.Class]int{lanes.ClassMain: 1} }
	})
	inPlace := make(chan struct{}) // closed: the adapter's in-place wait ends
	tried := make(chan struct{})   // closed: chat 51's reply was tried
	var once sync.Once
	var mu sync.Mutex
	limited := true
	h.tg.waitSend = func(ctx context.Context, out channels.Outbound, i int) error {
		mu.Lock()
		l := limited
		mu.Unlock()
		if out.ChatID != "51" || !l {
			return nil
		}
		once.Do(func() { close(tried) })
		if channels.RateLimitsReturned(ctx) {
			return floodErr{after: 30 * time.Second}
		}
		select { // the adapter's own wait, holding the caller's slot
		case <-inPlace:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer close(inPlace)
	h.handle(in("tg", "51", "limited"))
	<-tried
	h.handle(in("tg", "52", "other chat"))
	eventually(t, "the other chat's answer", func() bool { return slices.Contains(h.tg.texts(), "re: other chat") })
	mu.Lock()
	limited = false
	mu.Unlock()
	close(waits.release)
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: other chat", "re: limited"}) {
		t.Errorf("sent %q, want the other chat's answer first, then the limited chat's", got)
	}
	if got := waits.waits(); !slices.Equal(got, []time.Duration{30 * time.Second}) {
		t.Errorf("outbox waits %v, want the platform's 30s once", got)
	}
}
