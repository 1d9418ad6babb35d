package dispatch

import (
	"slices"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestMainSessionThreadKeepsItsLane (SPEC §2, §4): with dmScope main a
// message in a thread has its own session, agent:main:main:thread:<id>,
// and its own lane: the lane's key must keep the thread, or the message
// runs in the main session (and a thread's messages merge with the main
// chat's into one turn, which §4 forbids).
func TestMainSessionThreadKeepsItsLane(t *testing.T) {
	h := newHarness(t, "", nil)
	resolver, err := routing.NewResolver(routing.Config{DMScope: routing.ScopeMain})
	if err != nil {
		t.Fatal(err)
	}
	h.d.SetRuntime(&Runtime{Resolver: resolver, Queue: h.queue})
	h.handle(in("tg", "91", "in the main chat"))
	threaded := in("tg", "91", "in the thread")
	threaded.ThreadID = "42"
	h.handle(threaded)
	h.drained()
	users := func(key string) []string {
		var out []string
		for _, m := range h.history(key) {
			if m.Role == sessions.RoleUser {
				out = append(out, m.Text())
			}
		}
		return out
	}
	if got := users("agent:main:main"); !slices.Equal(got, []string{"in the main chat"}) {
		t.Errorf("the main session's messages are %q, want only the main chat's", got)
	}
	if got := users("agent:main:main:thread:42"); !slices.Equal(got, []string{"in the thread"}) {
		t.Errorf("the thread's session's messages are %q, want the thread's", got)
	}
}
