package dispatch

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
)

// TestDeleteAndSwitchStopChildren (SPEC §6.1): /delete of the current
// session and /switch end the conversation the chat was having, as /new
// does, so they stop the subagents that conversation started: a child
// left working announced its result into the session the chat moved to
// (the one switched to, or the one the next message starts after
// /delete), where the model answered a task nobody there had asked for.
func TestDeleteAndSwitchStopChildren(t *testing.T) {
	for _, tc := range []struct {
		name, command, reply string
		archive              bool // the chat has an archived session to switch to
		stays                bool // the command leaves the chat in its session: the child goes on
	}{
		{name: "delete", command: "/delete", reply: "Deleted the current session"},
		{name: "switch", command: "/switch 1", reply: "Switched to session", archive: true},
		{name: "switch to the current session", command: "/switch %s", reply: "Switched to session", archive: true, stays: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &model{started: make(chan struct{}, 10)}
			h := newHarness(t, "", m, func(h *harness) {
				h.agent = func(o *agents.Options) {
					o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
				}
			})
			parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "97"}
			calls := 0
			say := func(text string) {
				h.handle(in("tg", "97", text))
				h.drained()
				for ; calls < len(m.requests()); calls++ {
					<-m.started
				}
			}
			if tc.archive {
				say("earlier conversation")
				say("/new")
			}
			say("hello")

			_, unblock := workingChild(t, h, m, parent, "9a4c2e1b-6d3f-4b8a-8c71-2e5f0a9d3b60")
			defer unblock()
			before := len(m.requests())
			command := tc.command
			if strings.Contains(command, "%s") {
				st, err := h.mgr.Store("main")
				if err != nil {
					t.Fatal(err)
				}
				cur, _, _ := st.Get(parent)
				command = fmt.Sprintf(command, cur.SessionID)
			}
			h.handle(in("tg", "97", command))
			eventually(t, "the answer to "+tc.command, func() bool {
				for _, s := range h.tg.texts() {
					if strings.HasPrefix(s, tc.reply) {
						return true
					}
				}
				return false
			})
			m.mu.Lock()
			m.block = nil
			m.mu.Unlock()
			unblock() // a child still running finishes now and announces
			h.drained()
			announced := false
			for _, r := range m.requests()[before:] {
				for _, msg := range r.Messages {
					announced = announced || strings.Contains(msg.Text(), "[subagent result]")
				}
			}
			switch {
			case announced && !tc.stays:
				t.Fatalf("a child of the session %s left announced into the chat's session", command)
			case !announced && tc.stays:
				t.Fatalf("%s left the chat in its session but stopped its child", command)
			}
			if got := h.tg.texts(); !tc.stays && len(got) > 0 && !strings.HasPrefix(got[len(got)-1], tc.reply) {
				t.Errorf("sent %q after %s, want its answer last", got, command)
			}
		})
	}
}
