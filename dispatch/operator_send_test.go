package dispatch

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestSendToSessionByKey (issue 27): an operator's message reaches the
// session's last chat through the outbox, is recorded in the transcript
// as an assistant message marked "operator", and starts no agent turn.
// An unknown key, a session with no chat and an empty text are refused
// with errors naming why, and nothing is sent or recorded for them.
func TestSendToSessionByKey(t *testing.T) {
	h := newHarness(t, "", nil)
	h.handle(in("tg", "81", "hi"))
	h.drained()
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "81"}
	ctx := context.Background()
	sent, err := h.d.SendToSession(ctx, "main", key, "Maintenance at 18:00, back soon.")
	if err != nil {
		t.Fatalf("SendToSession: %v", err)
	}
	h.drained()
	if sent.Channel != "tg" || sent.ChatID != "81" || sent.SessionID == "" || sent.EntryID == "" {
		t.Errorf("sent = %+v, want tg chat 81 with the session and entry ids", sent)
	}
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: hi", "Maintenance at 18:00, back soon."}) {
		t.Errorf("chat got %q, want the reply then the operator's message", got)
	}
	if n := len(h.m.requests()); n != 1 {
		t.Errorf("%d model calls, want 1: the operator's message starts no turn", n)
	}
	hist := h.history(key.String())
	last := hist[len(hist)-1]
	if last.Role != sessions.RoleAssistant || last.Provider != OperatorProvider || last.Text() != "Maintenance at 18:00, back soon." {
		t.Errorf("last transcript message %s/%s %q, want the operator's message", last.Role, last.Provider, last.Text())
	}

	st, _ := h.mgr.Backend().Store("main")
	bare := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "82"}
	if _, err := st.Reset(ctx, bare, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		key  routing.Key
		text string
		want error
	}{
		{"unknown key", routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "404"}, "x", sessions.ErrNotFound},
		{"no chat yet", bare, "x", ErrNoChat},
		{"empty", key, "  ", ErrBadText},
		{"not utf-8", key, "\xff", ErrBadText},
	} {
		if _, err := h.d.SendToSession(ctx, "main", c.key, c.text); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	h.drained()
	if n := len(h.tg.texts()); n != 2 {
		t.Errorf("%d messages in the chat after the refusals, want still 2", n)
	}
	if n := len(h.history(key.String())); n != len(hist) {
		t.Errorf("transcript has %d messages after the refusals, want %d", n, len(hist))
	}
}
