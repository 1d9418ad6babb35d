package dispatch

import (
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestSteerBacklogRestartAnswersOnce (SPEC §3.7, §4): a steer-backlog
// message steered into a run, whose own follow-up turn had not run when
// the process stopped, gets that turn after the restart; the run's reply
// is not sent a second time for it.
func TestSteerBacklogRestartAnswersOnce(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	started2, release2 := make(chan struct{}), make(chan struct{})
	m := &scriptModel{}
	m.steps = []func(llm.Request) sessions.Message{
		func(llm.Request) sessions.Message {
			close(started)
			<-release
			return sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopToolUse, Content: []sessions.Content{
				{Type: sessions.BlockToolCall, ID: "call_1", Name: "sessions_list", Arguments: []byte(`{}`)}}}
		},
		func(llm.Request) sessions.Message {
			close(started2)
			<-release2
			return textMsg("answer one")
		},
		func(llm.Request) sessions.Message { return textMsg("answer two") },
		func(llm.Request) sessions.Message { return textMsg("answer three") },
	}
	h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: "steer-backlog", Debounce: time.Millisecond, Cap: 20, Drop: "summarize"}),
		func(h *harness) {
			h.agent = func(o *agents.Options) {
				o.Providers = map[string]llm.Provider{"fake": m}
				o.Agents = []agents.Agent{{ID: "main", Tools: agents.Tools{Allow: []string{"sessions_list"}}}}
			}
		})
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "sb1"}
	h.handle(in("tg", "sb1", "first"))
	<-started
	h.handle(in("tg", "sb1", "second"))
	eventually(t, "the second message to queue", func() bool { return h.d.queue.Depth(key) == 1 })
	close(release)
	<-started2 // "second" was steered in
	closed := make(chan struct{})
	d := h.d
	go func() { h.close(); close(closed) }()
	eventually(t, "the shutdown to begin", func() bool { return d.closing.Load() })
	close(release2)
	<-closed
	h.start()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	got := h.tg.texts()
	ones := 0
	for _, s := range got {
		if s == "answer one" {
			ones++
		}
	}
	if ones != 1 || len(got) != 2 {
		t.Errorf("chat got %q, want answer one once, then the follow-up's answer", got)
	}
}
