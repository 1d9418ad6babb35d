package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// TestQueueCommandAppliesToMessagesQueuedBehindIt (SPEC §4, §6.1): a
// /queue override sent while a turn runs applies to the messages queued
// after it too, once it has run: "/queue collect" then "b" and "c" make
// one merged turn, not the two turns of the followup mode in force when
// they arrived.
func TestQueueCommandAppliesToMessagesQueuedBehindIt(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Followup, Debounce: 20 * time.Millisecond, Cap: 20, Drop: lanes.DropSummarize}))
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "qo1"}
	h.handle(in("tg", "qo1", "a"))
	<-m.started
	h.handle(in("tg", "qo1", "/queue collect"))
	h.handle(in("tg", "qo1", "b"))
	h.handle(in("tg", "qo1", "c"))
	eventually(t, "three items to queue", func() bool { return h.d.queue.Depth(key) == 3 })
	close(m.block)
	h.drained()
	texts := h.tg.texts()
	if len(texts) != 3 || texts[0] != "re: a" || !strings.HasPrefix(texts[1], "Queue set: collect") ||
		!strings.Contains(texts[2], "b") || !strings.Contains(texts[2], "c") {
		t.Errorf("chat got %q, want re: a, the /queue answer, then one merged reply to b and c", texts)
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (a, then b and c merged)", n)
	}
}
