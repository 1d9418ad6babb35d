package channels

import (
	"errors"
	"testing"
	"time"
)

// TestConnTracker: connecting, reconnecting on the first failures,
// failing from FailingAfter on with Since at the first failure, connected
// again with the last error kept; Stopped fails at once.
func TestConnTracker(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := &ConnTracker{now: func() time.Time { return now }}
	tr.SetMode("polling")
	if c := tr.Connection(); c.State != ConnConnecting || c.Mode != "polling" || !c.Since.Equal(now) {
		t.Fatalf("start: %+v", c)
	}
	now = now.Add(time.Second)
	tr.Connected()
	first := now.Add(time.Second)
	for i := 1; i <= FailingAfter+1; i++ {
		now = now.Add(time.Second)
		tr.Failed(errors.New("refused"))
		c := tr.Connection()
		want := ConnReconnecting
		if i >= FailingAfter {
			want = ConnFailing
		}
		if c.State != want || c.Failures != i || !c.Since.Equal(first) || c.LastError != "refused" {
			t.Fatalf("failure %d: %+v, want %s since %v", i, c, want, first)
		}
	}
	now = now.Add(time.Second)
	tr.Connected()
	if c := tr.Connection(); c.State != ConnConnected || c.Failures != 0 || !c.Since.Equal(now) || c.LastError != "refused" {
		t.Fatalf("recovered: %+v", c)
	}
	tr.Stopped(errors.New("token refused"))
	if c := tr.Connection(); c.State != ConnFailing || c.LastError != "token refused" {
		t.Fatalf("stopped: %+v", c)
	}
}
