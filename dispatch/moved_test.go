package dispatch

import (
	"slices"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
)

func groupIn(chat, text string) channels.Inbound {
	m := in("tg", chat, text)
	m.ChatType, m.SenderID, m.CaseSensitive = channels.Group, "42", true
	return m
}

func movedIn(oldChat, newChat string) channels.Inbound {
	return channels.Inbound{Address: channels.Address{Channel: "tg", AccountID: "default", ChatID: oldChat},
		ChatType: channels.Group, CaseSensitive: true,
		Event: &channels.Event{Kind: channels.EventMoved, ChatID: newChat}}
}

// TestMovedChatKeepsPendingWork: a message journaled under the old chat's
// key before its chat moved (a group upgraded to a supergroup) runs,
// after a restart, in the moved session under the new key, not in a new
// session of the old key; the move delivered again changes nothing.
func TestMovedChatKeepsPendingWork(t *testing.T) {
	h := newHarness(t, "", nil)
	const oldChat, newChat = "-100", "-1001"
	h.handle(groupIn(oldChat, "first"))
	h.drained()
	oldKey, newKey := "agent:main:tg:group:"+oldChat, "agent:main:tg:group:"+newChat
	acceptOnly(t, h, groupIn(oldChat, "pending"))
	for range 2 { // each service message, or a redelivery
		h.handle(movedIn(oldChat, newChat))
	}
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	var texts []string
	for _, m := range h.history(newKey) {
		if m.Role == "user" {
			texts = append(texts, m.Text())
		}
	}
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "first") }) ||
		!slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "pending") }) {
		t.Errorf("moved session's user messages = %q, want the first and the pending one", texts)
	}
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	k, _ := routing.Parse(oldKey)
	if e, ok, err := st.Get(k); err != nil || ok {
		t.Errorf("old key after the move: %+v, %v, %v; want no session", e.SessionID, ok, err)
	}
	// And after yet another start, the move replayed is a no-op.
	h.handle(movedIn(oldChat, newChat))
	st, err = h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := st.List(); err != nil || len(l) != 1 || l[0].SessionKey != newKey {
		t.Errorf("sessions after the move replayed: %v, %v; want one under %s", l, err, newKey)
	}
}
