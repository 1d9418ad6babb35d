package dispatch

import (
	"context"
	"sync"
)

// Per-session order of replies taken over from another replica (issue 22
// item 7). A reply another process stored and did not finish answers
// older messages than any turn of its session that runs here later: it
// must leave first. The journal keeps a turn from starting while such a
// reply is another process's to send (pgstore's BeginTurn); once this
// process took the reply over, its session's next turn may run, and
// resendGate holds that turn's reply back until the taken-over one was
// sent. Taken-over replies are sent on their own goroutines (outbox
// goResend), not on their session's lane: a batch of the session may be
// waiting for its turn ahead of them there.
type resendGate struct {
	mu sync.Mutex
	// claiming counts the take-overs under way: what they take is not
	// known until they return, so every reply waits for them (a claim is
	// one statement, every orphanEvery).
	claiming int
	// keys counts the taken-over replies being sent, by session key.
	keys map[string]int
	// changed is closed, and replaced, at every release.
	changed chan struct{}
}

func newResendGate() *resendGate {
	return &resendGate{keys: map[string]int{}, changed: make(chan struct{})}
}

// claim marks a take-over under way; release ends it.
func (g *resendGate) claim() {
	g.mu.Lock()
	g.claiming++
	g.mu.Unlock()
}

// release ends a claim.
func (g *resendGate) release() {
	g.mu.Lock()
	g.claiming--
	g.broadcastLocked()
	g.mu.Unlock()
}

// add marks a taken-over reply of key being sent; done ends it.
func (g *resendGate) add(key string) {
	g.mu.Lock()
	g.keys[key]++
	g.mu.Unlock()
}

// done ends a send begun with add.
func (g *resendGate) done(key string) {
	g.mu.Lock()
	if g.keys[key]--; g.keys[key] <= 0 {
		delete(g.keys, key)
	}
	g.broadcastLocked()
	g.mu.Unlock()
}

func (g *resendGate) broadcastLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// wait returns once no take-over is under way and no taken-over reply of
// key is being sent, or when ctx ends.
func (g *resendGate) wait(ctx context.Context, key string) {
	for {
		g.mu.Lock()
		if g.claiming == 0 && g.keys[key] == 0 {
			g.mu.Unlock()
			return
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}
