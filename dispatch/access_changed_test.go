package dispatch

import (
	"strings"
	"sync"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestAccessChangedAsksQueuedMessagesAgain: a paired DM sender's messages
// wait behind their long turn; the operator revokes the pairing (the
// console's revoke: no config reload). The policy in force reads the
// pairing state, so once the dispatcher is told (AccessChanged) the
// queued messages are asked again and never reach the agent.
func TestAccessChangedAsksQueuedMessagesAgain(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 8)}
	h := newHarness(t, "", m)
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

	h.handle(in("tg", "5", "long question"))
	<-m.started
	h.handle(in("tg", "5", "queued secret"))
	mu.Lock()
	delete(approved, "5")
	mu.Unlock()
	h.d.AccessChanged()
	close(m.block)
	h.drained()
	for _, r := range m.requests() {
		if s := strings.Join(lastUserTexts(r.Messages), "|"); strings.Contains(s, "queued secret") {
			t.Fatalf("a queued message of a revoked sender reached the agent: %q", s)
		}
	}
}
