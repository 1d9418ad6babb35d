package dispatch

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestQueueModeSteerBacklog (seed 002, SPEC §4): a message arriving
// while a run is active is steered into it at its next model call, and
// kept for a follow-up turn of its own too. The follow-up turn gives the
// model a note naming it (its message is in the transcript once, not
// twice); each turn sends its reply, and the journal finishes everything.
func TestQueueModeSteerBacklog(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	first, second := in("tg", "71", "first"), in("tg", "71", "second")
	m := &scriptModel{}
	m.steps = []func(llm.Request) sessions.Message{
		func(llm.Request) sessions.Message { // run 1, first call: a tool step, so it calls the model again
			close(started)
			<-release
			return sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopToolUse, Content: []sessions.Content{
				{Type: sessions.BlockToolCall, ID: "call_1", Name: "sessions_list", Arguments: []byte(`{}`)}}}
		},
		func(req llm.Request) sessions.Message { // run 1, second call: steered
			if last := req.Messages[len(req.Messages)-1]; last.Role != sessions.RoleUser || last.Text() != "second" {
				t.Errorf("run 1's second call ends with %s %q, want the steered message", last.Role, last.Text())
			}
			return textMsg("answer one")
		},
		func(req llm.Request) sessions.Message { // the follow-up turn
			last := req.Messages[len(req.Messages)-1]
			if last.Role != sessions.RoleUser || !strings.HasPrefix(last.Text(), "[follow-up: 1 messages") || !strings.Contains(last.Text(), "second") {
				t.Errorf("the follow-up turn ends with %s %q, want the follow-up note naming the message", last.Role, last.Text())
			}
			return textMsg("answer two")
		},
	}
	h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: "steer-backlog", Debounce: time.Millisecond, Cap: 20, Drop: "summarize"}))
	useAgent(t, h, m, agents.Agent{ID: "main", Tools: agents.Tools{Allow: []string{"sessions_list"}}})
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "71"}
	h.handle(first)
	<-started
	h.handle(second)
	eventually(t, "the second message to queue", func() bool { return h.d.queue.Depth(key) == 1 })
	close(release)
	h.drained()

	if got := h.tg.texts(); !slices.Equal(got, []string{"answer one", "answer two"}) {
		t.Errorf("replies %q, want one per turn", got)
	}
	if n := len(m.requests()); n != 3 {
		t.Errorf("%d model calls, want 3 (two in run 1, one follow-up)", n)
	}
	var users []string
	for _, msg := range h.history(key.String()) {
		if msg.Role == sessions.RoleUser {
			users = append(users, firstLine(msg.Text(), 40))
		}
	}
	if len(users) != 3 || users[0] != "first" || users[1] != "second" || !strings.HasPrefix(users[2], "[follow-up") {
		t.Errorf("user entries %q, want first, second (once), the follow-up note", users)
	}
}

// TestQueueModeQueue (seed 002, SPEC §4): queue mode is plain FIFO, one
// turn per message in arrival order, with no debounce and nothing merged:
// messages the channel's burst window would join (followup mode does)
// each get their own turn and reply.
func TestQueueModeQueue(t *testing.T) {
	for _, mode := range []string{"followup", "queue"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: lanes.Mode(mode), Debounce: time.Second, Cap: 20, Drop: "summarize"}))
				setInbound(h, burstCfg(300*time.Millisecond, 0))
				msgs := []channels.Inbound{in("tg", "72", "one"), in("tg", "72", "two"), in("tg", "72", "three")}
				for _, msg := range msgs {
					h.handle(msg)
				}
				time.Sleep(300 * time.Millisecond)
				h.drained()
				got := h.tg.texts()
				want := []string{"re: one\ntwo\nthree"} // followup keeps the channel's bursts
				if mode == "queue" {
					want = []string{"re: one", "re: two", "re: three"}
				}
				if !slices.Equal(got, want) {
					t.Errorf("replies %q, want %q", got, want)
				}
			})
		})
	}
}
