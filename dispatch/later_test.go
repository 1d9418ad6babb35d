package dispatch

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestLaterStop: stop cancels the retries not fired yet (they never run),
// waits for one running, and refuses new ones.
func TestLaterStop(t *testing.T) {
	var l later
	var ran atomic.Int32
	l.after(time.Hour, func() { ran.Add(1) })
	started, release := make(chan struct{}), make(chan struct{})
	l.after(0, func() {
		close(started)
		<-release
		ran.Add(10)
	})
	<-started
	stopped := make(chan struct{})
	go func() {
		l.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("stop returned while a retry was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-stopped
	if n := ran.Load(); n != 10 {
		t.Errorf("ran = %d, want 10: the running retry finished and the pending one never ran", n)
	}
	l.after(0, func() { ran.Add(100) })
	time.Sleep(20 * time.Millisecond)
	if n := ran.Load(); n != 10 {
		t.Errorf("a retry started after stop ran (%d)", n)
	}
	if len(l.pending) != 0 {
		t.Errorf("%d timers still pending after stop", len(l.pending))
	}
}
