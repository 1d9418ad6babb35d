package dispatch

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestSteerOverflowIsAnswered (SPEC §4): in steer mode with drop=summarize,
// a message the cap dropped while a turn ran is answered even when the
// turn steered in every message queued after it: its overflow note gets a
// turn of its own. It used to wait unanswered, pending in the journal,
// until the session's next message.
func TestSteerOverflowIsAnswered(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	m := &scriptModel{}
	m.steps = []func(llm.Request) sessions.Message{
		func(llm.Request) sessions.Message { // run 1, first call: a tool step, so it calls the model again
			close(started)
			<-release
			return sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopToolUse, Content: []sessions.Content{
				{Type: sessions.BlockToolCall, ID: "call_1", Name: "sessions_list", Arguments: []byte(`{}`)}}}
		},
		func(req llm.Request) sessions.Message { // run 1, second call: "third" steered in
			if last := req.Messages[len(req.Messages)-1]; last.Text() != "third" {
				t.Errorf("run 1's second call ends with %q, want the steered message", last.Text())
			}
			return textMsg("answer one")
		},
		func(req llm.Request) sessions.Message { // the dropped message's turn
			last := req.Messages[len(req.Messages)-1]
			if !strings.HasPrefix(last.Text(), "[queue overflow: 1 ") || !strings.Contains(last.Text(), "second") {
				t.Errorf("the overflow turn ends with %q, want the note naming the dropped message", last.Text())
			}
			return textMsg("answer two")
		},
	}
	h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: "steer", Debounce: time.Millisecond, Cap: 1, Drop: "summarize"}))
	useAgent(t, h, m, agents.Agent{ID: "main", Tools: agents.Tools{Allow: []string{"sessions_list"}}})
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "74"}
	h.handle(in("tg", "74", "first"))
	<-started
	h.handle(in("tg", "74", "second"))
	h.handle(in("tg", "74", "third")) // past the cap: "second" is dropped with a summary
	eventually(t, "the third message to queue", func() bool { return h.d.queue.Depth(key) == 1 })
	close(release)
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"answer one", "answer two"}) {
		t.Errorf("replies %q, want the steered turn's, then the dropped message's", got)
	}
}
