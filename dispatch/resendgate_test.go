package dispatch

import (
	"context"
	"testing"
	"time"
)

// waitReturns reports whether g.wait(key) returns within d (a bound on a
// wait that must not block, generous for a loaded machine; a wait that
// must block is checked for the same d).
func waitReturns(g *resendGate, key string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan struct{})
	go func() {
		g.wait(context.Background(), key)
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// A reply of a session waits while a take-over is under way and while a
// reply of its session taken over is being sent; other sessions' replies
// wait only for the take-over.
func TestResendGateOrdersAdoptedReplies(t *testing.T) {
	g := newResendGate()
	if !waitReturns(g, "s1", 5*time.Second) {
		t.Fatal("wait blocked with nothing taken over")
	}
	g.claim()
	if waitReturns(g, "s2", 200*time.Millisecond) {
		t.Fatal("a reply left while a take-over was under way")
	}
	g.add("s1")
	blocked := make(chan struct{})
	go func() {
		g.wait(context.Background(), "s1")
		close(blocked)
	}()
	g.release()
	if !waitReturns(g, "s2", 5*time.Second) {
		t.Fatal("another session's reply waited for s1's taken-over reply")
	}
	select {
	case <-blocked:
		t.Fatal("s1's reply left before its taken-over reply was sent")
	case <-time.After(200 * time.Millisecond):
	}
	g.done("s1")
	select {
	case <-blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("s1's reply still waiting after the taken-over one was sent")
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.add("s3")
	cancel()
	g.wait(ctx, "s3") // returns: ctx ended
}
