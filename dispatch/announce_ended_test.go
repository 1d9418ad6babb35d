package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestAnnouncementOfEndedSessionIsDropped: a subagent's result that
// arrives after its parent session was ended by hand (/new, /delete, an
// operator's reset or delete, with the daemon running or not) belonged to
// that conversation: it does not start a turn in the next session (nor
// start the session /delete promised to the next message). A child that
// finished just before the end, or whose end the daemon never saw (the
// CLI on the stopped daemon's state), is not stopped by the end itself:
// its announcement waits on the parent's lane or in the journal. A session
// kept meanwhile gets the result, as before.
func TestAnnouncementOfEndedSessionIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name      string
		end       func(h *harness, parent routing.Key)
		delivered bool
	}{
		{"/new", func(h *harness, _ routing.Key) { h.handle(in("tg", "98", "/new")) }, false},
		{"/delete", func(h *harness, _ routing.Key) { h.handle(in("tg", "98", "/delete")) }, false},
		{"store Reset (API, CLI)", func(h *harness, parent routing.Key) {
			st, _ := h.mgr.Store("main")
			if _, err := st.Reset(h.ctx, parent, sessions.ResetOptions{Manual: true, Reason: "cli"}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"store Delete (API, CLI)", func(h *harness, parent routing.Key) {
			st, _ := h.mgr.Store("main")
			if err := st.Delete(h.ctx, parent); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"session kept", func(*harness, routing.Key) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &model{started: make(chan struct{}, 10)}
			h := newHarness(t, "", m)
			parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "98"}
			h.handle(in("tg", "98", "hello"))
			<-m.started
			h.drained()
			child := spawnedChild(t, h, parent, "4c2e8a6b-1f3d-4b7a-9e05-6d8c2b1a3f70")
			tc.end(h, parent)
			h.drained()
			// What agents.Runner.announce sends when the child ends.
			if err := h.d.Dispatch(h.ctx, agents.Dispatch{ID: "announce:" + child.String(), AgentID: "main", Key: parent,
				Message: sessions.UserText("[subagent result]\nstatus: done\n\nthe job is done", time.Now()), Deliver: true}); err != nil {
				t.Fatal(err)
			}
			h.drained()
			st, _ := h.mgr.Store("main")
			got := false
			if _, ok, _ := st.Get(parent); ok {
				for _, msg := range h.history(parent.String()) {
					got = got || strings.Contains(msg.Text(), "[subagent result]")
				}
			} else if tc.delivered {
				t.Fatal("the parent has no session")
			}
			if got != tc.delivered {
				t.Errorf("the result is in the parent's current session: %v, want %v", got, tc.delivered)
			}
			want := 1
			if tc.delivered {
				want = 2
			}
			if n := len(m.requests()); n != want {
				t.Errorf("the model was asked %d times, want %d", n, want)
			}
			if n := h.mgr.Journal().Stats().Pending; n != 0 {
				t.Errorf("%d records pending, want none (the dropped announcement is finished)", n)
			}
		})
	}
}
