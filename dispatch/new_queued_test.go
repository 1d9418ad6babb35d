package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// TestNewQueuedBetweenMessagesSplitsThem (SPEC §3.6, §4): in collect
// mode, messages sent while a reply runs wait for one follow-up turn; a
// /new among them splits them: those before it are answered in the old
// session, those after it in the new one, and none is lost or answered
// twice.
func TestNewQueuedBetweenMessagesSplitsThem(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Collect, Debounce: time.Millisecond, Cap: 20, Drop: lanes.DropSummarize}))
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "73"}
	h.handle(in("tg", "73", "a"))
	<-m.started
	for _, text := range []string{"b1", "b2", "/new", "c1", "c2"} {
		h.handle(in("tg", "73", text))
	}
	eventually(t, "the messages to queue", func() bool { return h.d.queue.Depth(key) == 5 })
	m.mu.Lock()
	blk := m.block
	m.block = nil
	m.mu.Unlock()
	close(blk)
	h.drained()
	reqs := m.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3 (a; b1+b2; c1+c2)", len(reqs))
	}
	if got := userMessages(reqs[1].Messages); !slices.Equal(got, []string{"a", "b1\n\nb2"}) {
		t.Errorf("the old session's follow-up saw %q", got)
	}
	if got := userMessages(reqs[2].Messages); !slices.Equal(got, []string{"c1\n\nc2"}) {
		t.Errorf("the new session's first turn saw %q, want only what came after /new", got)
	}
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: a", "re: b1\n\nb2", "Started a new session.", "re: c1\n\nc2"}) {
		t.Errorf("sent %q", got)
	}
}
