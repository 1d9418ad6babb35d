package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
)

// TestDeleteNumberedSession: /delete n deletes the archived session that
// /sessions numbers n, not only the current one (issue 27: it refused any
// number). The deleted one leaves the chat's list (the rest renumber),
// /switch refuses it by number and by id, the current session is
// untouched, and the store keeps it for an operator.
func TestDeleteNumberedSession(t *testing.T) {
	m := &model{reply: func(llm.Request) (string, error) { return "ok", nil }}
	h := newHarness(t, "", m)
	say := func(text string) string {
		t.Helper()
		before := len(h.tg.texts())
		h.handle(in("tg", "61", text))
		h.drained()
		got := h.tg.texts()
		if len(got) != before+1 {
			t.Fatalf("%s: replies %q, want one more", text, got[before:])
		}
		return got[before]
	}
	say("first topic")
	say("/new")
	say("second topic")
	say("/new")
	say("third topic")
	st, err := h.mgr.Backend().Store("main")
	if err != nil {
		t.Fatal(err)
	}
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "61"}
	arch, err := st.Archived(key)
	if err != nil || len(arch) != 2 {
		t.Fatalf("archived = %+v, %v; want two", arch, err)
	}
	newer, older := arch[0], arch[1]
	cur, _, _ := st.Get(key)

	if got := say("/sessions"); !strings.Contains(got, "1. "+newer.SessionID) || !strings.Contains(got, "2. "+older.SessionID) {
		t.Fatalf("/sessions = %q, want 1. %s and 2. %s", got, newer.SessionID, older.SessionID)
	}
	if got := say("/delete 3"); !strings.HasPrefix(got, "No archived session 3") {
		t.Errorf("/delete 3 = %q, want no such session", got)
	}
	if got := say("/delete 2"); !strings.HasPrefix(got, "Deleted archived session "+older.SessionID) {
		t.Fatalf("/delete 2 = %q, want %s deleted", got, older.SessionID)
	}
	if got := say("/sessions"); !strings.Contains(got, "1. "+newer.SessionID) || strings.Contains(got, older.SessionID) {
		t.Errorf("/sessions after /delete 2 = %q, want only %s", got, newer.SessionID)
	}
	if got := say("/switch 2"); !strings.HasPrefix(got, "No archived session 2") {
		t.Errorf("/switch 2 after its deletion = %q, want refused", got)
	}
	if got := say("/switch " + older.SessionID); !strings.Contains(got, "was deleted") {
		t.Errorf("/switch <deleted id> = %q, want refused as deleted", got)
	}
	if got := say("/delete " + older.SessionID); !strings.Contains(got, "was deleted") {
		t.Errorf("/delete <deleted id> = %q, want refused as deleted", got)
	}
	if now, ok, _ := st.Get(key); !ok || now.SessionID != cur.SessionID {
		t.Errorf("current session %s after /delete 2, want %s untouched", now.SessionID, cur.SessionID)
	}
	arch, _ = st.Archived(key)
	if len(arch) != 2 || arch[1].SessionID != older.SessionID || !arch[1].Deleted || arch[0].Deleted {
		t.Errorf("store's archive = %+v, want %s kept and marked deleted, %s not", arch, older.SessionID, newer.SessionID)
	}
	if msgs := h.history("agent:main:tg:direct:61"); len(msgs) == 0 {
		t.Error("the current transcript is empty")
	}
	if tr, err := st.Transcript(older.SessionID); err != nil {
		t.Errorf("the deleted session's transcript: %v, want it kept", err)
	} else if hist, err := tr.History(h.ctx); err != nil || len(hist) == 0 {
		t.Errorf("the deleted session's history = %d messages, %v; want it kept", len(hist), err)
	}

	// /delete without a number still deletes the current session.
	if got := say("/delete"); !strings.HasPrefix(got, "Deleted the current session") {
		t.Errorf("/delete = %q", got)
	}
	if got := say("/sessions"); !strings.HasPrefix(got, "No current session") || !strings.Contains(got, "1. "+newer.SessionID) || strings.Contains(got, cur.SessionID) {
		t.Errorf("/sessions after /delete = %q, want no current, only %s offered", got, newer.SessionID)
	}
}
