package dispatch

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
)

// TestAnnouncementToRevokedDMIsDropped (SPEC §6, §5): a DM sender's
// session started a subagent; while it worked the operator revoked the
// sender (removed from allowFrom, pairing revoked). The child's result
// is that sender's work, reported later, as a job occurrence is their
// message sent later: it must not reach the agent and be answered into
// the chat of someone the policy no longer admits.
func TestAnnouncementToRevokedDMIsDropped(t *testing.T) {
	m := &model{started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, func(h *harness) {
		h.agent = func(o *agents.Options) {
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
		}
	})
	var mu sync.Mutex
	approved := map[string]bool{"5": true}
	admits := func(in channels.Inbound) (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if approved[in.SenderID] {
			return true, ""
		}
		return false, "not_allowlisted"
	}
	rt := *h.d.Runtime()
	rt.Access = func(in channels.Inbound) Verdict {
		ok, r := admits(in)
		return Verdict{Allow: ok, Privileged: ok, Reason: r}
	}
	rt.Admits = admits
	h.d.SetRuntime(&rt)

	parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "5"}
	h.handle(in("tg", "5", "hello"))
	<-m.started
	h.drained()
	sent := len(h.tg.sent())

	_, unblock := workingChild(t, h, m, parent, "8b3d5f1a-2c4e-4a7b-9d60-3e1f7a5c2b80")
	mu.Lock()
	delete(approved, "5")
	mu.Unlock()
	h.d.AccessChanged()
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	unblock()
	h.drained()
	for _, r := range m.requests() {
		if s := strings.Join(lastUserTexts(r.Messages), "|"); strings.Contains(s, "[subagent result]") {
			t.Fatalf("the result of a revoked sender's subagent reached the agent: %q", s)
		}
	}
	if got := h.tg.sent(); len(got) != sent {
		t.Errorf("the revoked sender's chat got %d more message(s)", len(got)-sent)
	}

	// Approved again, the sender's next child reports as before.
	mu.Lock()
	approved["5"] = true
	mu.Unlock()
	h.d.AccessChanged()
	_, unblock = workingChild(t, h, m, parent, "1c7e4a2d-9b3f-4e6a-8d15-6f2b0c9e4a70")
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	unblock()
	h.drained()
	if got := h.tg.sent(); len(got) != sent+1 || !strings.Contains(got[len(got)-1].Text, "[subagent result]") {
		t.Errorf("an admitted sender's child result was not answered: sent %q", h.tg.texts())
	}
}
