package dispatch

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// blockCalls makes m's later calls wait for the returned channel to
// close (or their context to end); started receives once per call.
func blockCalls(m *model) (started, release chan struct{}) {
	started, release = make(chan struct{}, 10), make(chan struct{})
	m.mu.Lock()
	m.block, m.started = release, started
	m.mu.Unlock()
	return started, release
}

// contextOf is key's session context (a compaction shows as its Summary).
func (h *harness) contextOf(key routing.Key) sessions.Context {
	h.t.Helper()
	st, err := h.mgr.Store(key.Agent)
	if err != nil {
		h.t.Fatal(err)
	}
	e, ok, err := st.Get(key)
	if err != nil || !ok {
		h.t.Fatalf("no session %s: %v", key, err)
	}
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := tr.Context(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// TestStopDuringCompactRollsBackCleanly (SPEC §5, §6.1): /stop while
// /compact is summarising stops it: no compaction is written, the history
// stays whole, and the chat is told the compaction was stopped and the
// history is unchanged — not that it failed with "something went wrong
// while answering", which sent members to try again for nothing.
func TestStopDuringCompactRollsBackCleanly(t *testing.T) {
	m := &model{}
	h := newHarness(t, "", m)
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "71"}
	for _, s := range []string{"a", "b", "c"} {
		h.handle(in("tg", "71", s))
		h.drained()
	}
	summarizing, release := blockCalls(m)
	defer close(release)
	h.handle(in("tg", "71", "/compact"))
	<-summarizing
	h.handle(in("tg", "71", "/stop"))
	h.drained()
	texts := h.tg.texts()
	if !slices.Contains(texts, "Compaction stopped: the conversation history is unchanged.") {
		t.Errorf("chat got %q, want the stop of the compaction said", texts)
	}
	for _, s := range texts {
		if strings.Contains(s, "failed") || strings.Contains(s, "Compacted") {
			t.Errorf("chat got %q after /stop", s)
		}
	}
	if c := h.contextOf(key); c.Summary != "" || len(c.Messages) != 6 {
		t.Errorf("after /stop the context has summary %q and %d messages, want none and all 6", c.Summary, len(c.Messages))
	}
	st, _ := h.mgr.Store("main")
	if e, _, _ := st.Get(key); e.CompactionCount != 0 {
		t.Errorf("compactionCount %d after a stopped compaction", e.CompactionCount)
	}
}

// TestInterruptWaitsForCompact (SPEC §4, §6.1): in interrupt mode a
// message sent while /compact runs does not cancel the compaction the
// member asked for (a command is no answer to supersede, as a command
// does not interrupt a turn): the compaction finishes, then the message
// is answered on the compacted history.
func TestInterruptWaitsForCompact(t *testing.T) {
	m := &model{}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Interrupt, Cap: 20, Drop: lanes.DropSummarize}))
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "72"}
	for _, s := range []string{"a", "b", "c"} {
		h.handle(in("tg", "72", s))
		h.drained()
	}
	summarizing, release := blockCalls(m)
	h.handle(in("tg", "72", "/compact"))
	<-summarizing
	h.handle(in("tg", "72", "d"))
	eventually(t, "the message to queue", func() bool { return h.d.queue.Depth(key) == 1 })
	close(release)
	h.drained()
	texts := h.tg.texts()
	if !slices.Contains(texts, "Compacted the conversation history.") {
		t.Errorf("chat got %q: the compaction was not finished", texts)
	}
	if texts[len(texts)-1] != "re: d" {
		t.Errorf("chat got %q, want the message answered last", texts)
	}
	if c := h.contextOf(key); !strings.Contains(c.Summary, "re: ") {
		t.Errorf("context summary %q: the compaction was not written", c.Summary)
	}
}
