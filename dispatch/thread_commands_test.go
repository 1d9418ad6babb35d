package dispatch

import (
	"slices"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestThreadCommandsActOnTheThreadOnly (SPEC §2, §6.1): a thread (a
// Discord thread, a Telegram forum topic) is a session of its own, so
// /stop in it leaves the parent channel's running reply alone and /new
// in it resets the thread's session, never the parent's.
func TestThreadCommandsActOnTheThreadOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		channel string
		topic   bool
	}{{"discord thread", "discord", false}, {"telegram topic", "tg", true}} {
		t.Run(tc.name, func(t *testing.T) {
			m := &model{started: make(chan struct{}, 10)}
			h := newHarness(t, "", m)
			room := func(thread, text string) channels.Inbound {
				msg := in(tc.channel, "555", text)
				msg.ChatType, msg.SenderID = channels.Channel, "42"
				if tc.topic {
					msg.ChatType = channels.Group
				}
				if thread != "" {
					msg.ThreadID, msg.IsTopic = thread, tc.topic
					if !tc.topic {
						msg.ParentChatID = "555"
					}
				}
				return msg
			}
			parentMsg, threadMsg := room("", "in the channel"), room("77", "in the thread")
			parent, err := h.d.Route(parentMsg)
			if err != nil {
				t.Fatal(err)
			}
			thread, err := h.d.Route(threadMsg)
			if err != nil {
				t.Fatal(err)
			}
			if thread.Key == parent.Key || thread.Key.Thread != "77" {
				t.Fatalf("thread key %s, parent key %s", thread.Key, parent.Key)
			}
			h.handle(threadMsg)
			<-m.started
			h.drained()
			st, err := h.mgr.Store("main")
			if err != nil {
				t.Fatal(err)
			}
			threadBefore, _, _ := st.Get(thread.Key)

			blk := make(chan struct{})
			m.mu.Lock()
			m.block = blk
			m.mu.Unlock()
			h.handle(parentMsg)
			<-m.started // the parent's reply runs
			h.handle(room("77", "/stop"))
			h.handle(room("77", "/new"))
			eventually(t, "the thread's /new", func() bool {
				e, _, _ := st.Get(thread.Key)
				return e.SessionID != threadBefore.SessionID
			})
			m.mu.Lock()
			m.block = nil
			m.mu.Unlock()
			close(blk)
			h.drained()
			if got := h.tg.texts(); tc.channel == "tg" && !slices.Contains(got, "re: [u555] in the channel") {
				t.Errorf("sent %q: the parent's reply was stopped by /stop in the thread", got)
			}
			if got := userMessages(m.requests()[1].Messages); !slices.Equal(got, []string{"[u555] in the channel"}) {
				t.Errorf("the parent's turn saw %q", got)
			}
			if hist := h.history(parent.Key.String()); countRole(hist, "assistant") != 1 {
				t.Errorf("the parent's session holds %d answers, want its one reply (not stopped, not reset)", countRole(hist, "assistant"))
			}
		})
	}
}
