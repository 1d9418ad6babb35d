package dispatch

import (
	"slices"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestSendPolicyDenyRecordsRepliesWithoutSending (seed 002, issue 27): a
// session whose sendPolicy is deny answers in its transcript but nothing
// is sent to its chat, and the message is finished (not retried); allow
// sends again. Commands still answer (the chat can see /status).
func TestSendPolicyDenyRecordsRepliesWithoutSending(t *testing.T) {
	h := newHarness(t, "", nil)
	h.handle(in("tg", "91", "first"))
	h.drained()
	st, _ := h.mgr.Backend().Store("main")
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "91"}
	policy := func(p string) {
		t.Helper()
		if _, err := st.Patch(h.ctx, key, func(e *sessions.Entry) error { e.SendPolicy = p; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	policy(sessions.SendDeny)
	h.handle(in("tg", "91", "second"))
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: first"}) {
		t.Errorf("chat got %q with send policy deny, want only the first reply", got)
	}
	var answers []string
	for _, m := range h.history(key.String()) {
		if m.Role == sessions.RoleAssistant {
			answers = append(answers, m.Text())
		}
	}
	if !slices.Equal(answers, []string{"re: first", "re: second"}) {
		t.Errorf("transcript replies %q, want both recorded", answers)
	}
	h.handle(in("tg", "91", "/status"))
	h.drained()
	if got := h.tg.texts(); len(got) != 2 {
		t.Errorf("chat got %q, want /status answered despite deny", got)
	}
	policy(sessions.SendAllow)
	h.handle(in("tg", "91", "third"))
	h.drained()
	if got := h.tg.texts(); len(got) != 3 || got[2] != "re: third" {
		t.Errorf("chat got %q after allow, want the third reply sent", got)
	}
}
