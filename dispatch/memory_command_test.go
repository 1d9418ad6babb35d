package dispatch

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestMemoryCommands: /memory shows the sender their own notes only (the
// operator's note written before any turn included), /forget n erases one,
// a bad or unknown n is answered with what to do, and /forget erases the
// rest without touching another sender's notes.
func TestMemoryCommands(t *testing.T) {
	h := newHarness(t, "", nil)
	mem := h.mgr.Backend().Memory()
	ctx := context.Background()
	mine, theirs := sessions.SenderScope("main", "tg", "1"), sessions.SenderScope("main", "tg", "2")
	for _, n := range []struct {
		s    sessions.MemoryScope
		text string
	}{{mine, "likes tea"}, {mine, "lives in\nLyon"}, {theirs, "likes coffee"}} {
		if _, err := mem.AddNote(ctx, n.s, n.text, time.Now(), sessions.MemoryLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(text, want string) {
		t.Helper()
		before := len(h.tg.texts())
		h.handle(in("tg", "1", text))
		eventually(t, "the answer to "+text, func() bool { return len(h.tg.texts()) > before })
		if got := h.tg.texts()[before]; !strings.Contains(got, want) {
			t.Errorf("%s answered %q, want it to say %q", text, got, want)
		}
	}
	ask("/memory", "1. likes tea\n2. lives in Lyon")
	ask("/forget x", "Usage: /forget [n]")
	ask("/forget 9", "I keep no note 9 about you")
	ask("/forget 1", "Forgot note 1.")
	ask("/memory", "2. lives in Lyon")
	ask("/forget", "Forgot the 1 note I kept about you.")
	ask("/memory", "I keep no notes about you.")
	if got := h.tg.texts(); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "coffee") }) {
		t.Errorf("another sender's note was shown: %q", got)
	}
	if ns, err := mem.Notes(ctx, theirs); err != nil || len(ns) != 1 {
		t.Errorf("the other sender's notes after /forget: %v, %v", ns, err)
	}
}

// TestMemoryOfAnotherAgentIsLabelled: when the notes /memory shows are
// another agent's, each says whose it is and the header says /forget n
// erases this chat's agent's note n, so a listed "1." is never answered
// "no note 1" without a word of why; /forget still erases every agent's.
func TestMemoryOfAnotherAgentIsLabelled(t *testing.T) {
	h := newHarness(t, "", nil)
	mem := h.mgr.Backend().Memory()
	ctx := context.Background()
	st, err := h.mgr.Store("other")
	if err != nil {
		t.Fatal(err)
	}
	k, err := routing.PeerKey("other", "tg", "", routing.Direct, "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "tg", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.AddNote(ctx, sessions.SenderScope("other", "tg", "1"), "likes tea", time.Now(), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	ask := func(text string) string {
		t.Helper()
		before := len(h.tg.texts())
		h.handle(in("tg", "1", text))
		eventually(t, "the answer to "+text, func() bool { return len(h.tg.texts()) > before })
		return h.tg.texts()[before]
	}
	if got := ask("/memory"); !strings.Contains(got, "[other] 1. likes tea") || !strings.Contains(got, "/forget n erases note n of [main]") {
		t.Errorf("/memory answered %q; want the note labelled with its agent and what /forget n erases", got)
	}
	if got := ask("/forget"); !strings.Contains(got, "Forgot the 1 note") {
		t.Errorf("/forget answered %q", got)
	}
}

// TestMemoryInGroupIsPrivate: /memory typed in a group says how many notes
// there are and where to read them, never their text (the room would read
// it); /forget there still erases them.
func TestMemoryInGroupIsPrivate(t *testing.T) {
	h := newHarness(t, "", nil)
	mem := h.mgr.Backend().Memory()
	if _, err := mem.AddNote(context.Background(), sessions.SenderScope("main", "tg", "1"), "takes insulin at noon", time.Now(), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	ask := func(text string) string {
		t.Helper()
		before := len(h.tg.texts())
		h.handle(groupMsg("-100", "1", text))
		eventually(t, "the answer to "+text, func() bool { return len(h.tg.texts()) > before })
		return h.tg.texts()[before]
	}
	if got := ask("/memory"); strings.Contains(got, "insulin") || !strings.Contains(got, "I keep 1 note about you") ||
		!strings.Contains(got, "direct chat") {
		t.Errorf("/memory in a group answered %q; want the count and where to read them, not the note", got)
	}
	if got := ask("/forget"); !strings.Contains(got, "Forgot the 1 note") {
		t.Errorf("/forget in a group answered %q", got)
	}
}

// TestForgetErasesNotesOfAnAgentWithoutSessions: a member's notes kept by
// an agent that holds no session (its sessions pruned or deleted, the
// agent taken out of the config, a note the operator wrote) are listed by
// /memory and erased by /forget, which promises every agent's notes.
func TestForgetErasesNotesOfAnAgentWithoutSessions(t *testing.T) {
	h := newHarness(t, "", nil)
	mem := h.mgr.Backend().Memory()
	ctx := context.Background()
	gone := sessions.SenderScope("retired", "tg", "1")
	if _, err := mem.AddNote(ctx, gone, "lives in Lyon", time.Now(), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	ask := func(text string) string {
		t.Helper()
		before := len(h.tg.texts())
		h.handle(in("tg", "1", text))
		eventually(t, "the answer to "+text, func() bool { return len(h.tg.texts()) > before })
		return h.tg.texts()[before]
	}
	if got := ask("/memory"); !strings.Contains(got, "[retired] 1. lives in Lyon") {
		t.Errorf("/memory answered %q; want the note of the agent without sessions, labelled", got)
	}
	if got := ask("/forget"); !strings.Contains(got, "Forgot the 1 note") {
		t.Errorf("/forget answered %q", got)
	}
	if ns, err := mem.Notes(ctx, gone); err != nil || len(ns) != 0 {
		t.Errorf("the note of the agent without sessions after /forget: %v, %v", ns, err)
	}
}
