package dispatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
)

// typer is a chunking adapter ("ty") that shows a typing indicator: each
// Typing call blocks until release is closed or its context ends, and
// the adapter records, in order, the typing calls' ends and the chunks
// sent.
type typer struct {
	chat
	release chan struct{}
	mu      sync.Mutex
	events  []string // "typing", "typing-cancelled", "send"
	typing  chan struct{}
}

func (a *typer) Typing(ctx context.Context, out channels.Outbound) error {
	select {
	case a.typing <- struct{}{}:
	default:
	}
	ev := "typing"
	select {
	case <-a.release:
	case <-ctx.Done():
		ev = "typing-cancelled"
	}
	a.mu.Lock()
	a.events = append(a.events, ev)
	a.mu.Unlock()
	return ctx.Err()
}

func (a *typer) SendChunk(ctx context.Context, out channels.Outbound, i int, chunk string) error {
	a.mu.Lock()
	a.events = append(a.events, "send")
	a.mu.Unlock()
	return a.chat.SendChunk(ctx, out, i, chunk)
}

func (a *typer) Send(ctx context.Context, out channels.Outbound) error {
	for i, ch := range a.Chunks(out) {
		if err := a.SendChunk(ctx, out, i, ch); err != nil {
			return err
		}
	}
	return nil
}

func (a *typer) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.events...)
}

// TestTypingInFlightFinishesBeforeReply: a typing action still in flight
// when the answer is ready is let finish, not cancelled (cancelling an
// HTTP call closes its connection, which the reply would then have to
// open again), and the reply goes out only after it: the indicator never
// lands after the answer.
func TestTypingInFlightFinishesBeforeReply(t *testing.T) {
	m := &model{block: make(chan struct{})}
	h := newHarness(t, "", m)
	h.d.typingDrain = time.Minute
	h.d.typingDelay = -1
	a := &typer{chat: chat{name: "ty"}, release: make(chan struct{}), typing: make(chan struct{}, 1)}
	h.d.Register(a)
	h.handle(in("ty", "c1", "hi"))
	// The model answers only once the typing call is in flight (a turn
	// that ends before its typing loop started sends none, and this would
	// wait for it forever), and then while it blocks: the reply must wait
	// for it.
	select {
	case <-a.typing:
	case <-time.After(10 * time.Second):
		t.Fatal("no typing action while the model ran")
	}
	close(m.block)
	time.Sleep(100 * time.Millisecond)
	if got := a.log(); len(got) != 0 {
		t.Fatalf("before the typing call ended: %v, want nothing", got)
	}
	close(a.release)
	h.drained()
	got := a.log()
	if len(got) != 2 || got[0] != "typing" || got[1] != "send" {
		t.Fatalf("events %v, want [typing send]", got)
	}
}

// TestTypingStuckIsCancelled: a typing action that does not end within
// the drain is cancelled, and the reply still goes out. The model answers
// only once the action is in flight: a turn that ends before its typing
// loop started sends none (typingLoop.run), which under load an instant
// model's turn did (CI, 2026-12-02: events [send]).
func TestTypingStuckIsCancelled(t *testing.T) {
	m := &model{block: make(chan struct{})}
	h := newHarness(t, "", m)
	h.d.typingDrain = 10 * time.Millisecond
	h.d.typingDelay = -1
	a := &typer{chat: chat{name: "ty"}, release: make(chan struct{}), typing: make(chan struct{}, 1)}
	h.d.Register(a)
	h.handle(in("ty", "c1", "hi"))
	select {
	case <-a.typing:
	case <-time.After(10 * time.Second):
		t.Fatal("no typing action while the model ran")
	}
	close(m.block)
	h.drained()
	got := a.log()
	if len(got) != 2 || got[0] != "typing-cancelled" || got[1] != "send" {
		t.Fatalf("events %v, want [typing-cancelled send]", got)
	}
}

// TestTypingOnlyForTurnsThatTakeTime: a turn answered within typingDelay
// shows no typing indicator (no platform call, none for the reply to wait
// for); a turn still running after it shows one, before its reply.
func TestTypingOnlyForTurnsThatTakeTime(t *testing.T) {
	m := &model{block: make(chan struct{})}
	h := newHarness(t, "", m)
	h.d.typingDelay = 50 * time.Millisecond
	a := &typer{chat: chat{name: "ty"}, release: make(chan struct{}), typing: make(chan struct{}, 1)}
	close(a.release)
	h.d.Register(a)

	h.handle(in("ty", "slow", "hi"))
	select {
	case <-a.typing:
	case <-time.After(10 * time.Second):
		t.Fatal("no typing indicator while the model ran past the delay")
	}
	close(m.block)
	h.drained()
	if got := a.log(); len(got) != 2 || got[0] != "typing" || got[1] != "send" {
		t.Fatalf("slow turn: events %v, want [typing send]", got)
	}

	h.d.typingDelay = time.Minute // longer than any turn below
	h.handle(in("ty", "fast", "hi"))
	h.drained()
	if got := a.log(); len(got) != 3 || got[2] != "send" {
		t.Fatalf("fast turn: events %v, want the slow turn's then [send] alone", got)
	}
}

// TestTypingFastTurnStartsNothing: the indicator of a turn that ends
// within typingDelay costs a stopped timer: no goroutine is started and no
// context made for it (issue 21: they were a tenth of a message's
// allocations at load), and the turn's end does not wait.
func TestTypingFastTurnStartsNothing(t *testing.T) {
	d := &Dispatcher{typingDelay: time.Minute}
	tn := &turn{d: d}
	a := &typer{chat: chat{name: "ty"}, release: make(chan struct{}), typing: make(chan struct{}, 1)}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { tn.startTyping(ctx, a)() }); n > 5 {
		t.Errorf("a fast turn's typing indicator: %v allocations, want at most 5", n)
	}
	if got := a.log(); len(got) != 0 {
		t.Errorf("events %v, want none", got)
	}
}
