package api_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/internal/webtest"
)

// TestOperatorEndStopsSubagents: an operator's DELETE or reset of a
// session (the API, `gateway sessions delete|reset` through the daemon)
// stops the subagents it started, as /new and /delete do in the chat: a
// child finishing later would announce its result into the next session,
// which never asked for it (a DELETE's next session would be started by
// it).
func TestOperatorEndStopsSubagents(t *testing.T) {
	for _, tc := range []struct{ name, method, suffix string }{
		{"delete", "DELETE", ""},
		{"reset", "POST", "/reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := openaitest.NewServer(t)
			hold := make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(hold) }) }
			defer release()
			fake.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
				switch last := r.LastUserText(); {
				case n == 0:
					return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "sessions_spawn",
						Arguments: `{"task":"the long job"}`}}}
				case strings.Contains(last, "the long job"):
					return openaitest.Reply{Text: "job done", Hold: hold} // the child works until released
				default:
					return openaitest.Reply{Text: "ok"}
				}
			})
			env := webtest.Start(t, webtest.Config{OpenAIBaseURL: fake.BaseURL(), AgentTools: []string{"sessions_spawn"}})
			c := newClient(t, env, "")
			sid := c.chat("main", "start the job", "").SessionID
			childAsked := func() bool {
				for _, r := range fake.Requests() {
					if strings.Contains(r.LastUserText(), "the long job") {
						return true
					}
				}
				return false
			}
			waitFor(t, "the child's model call", childAsked)
			if code, body := c.do(tc.method, "/api/agents/main/sessions/"+sid+tc.suffix, nil); code != 200 {
				t.Fatalf("%s: %d %v", tc.name, code, body)
			}
			// A child left running would now answer and announce.
			waitFor(t, "the child's call to be cancelled (else its result is announced into the next session)", func() bool { return fake.Cancelled() >= 1 })
			release()
			env.Stop()
			for _, r := range fake.Requests() {
				for _, m := range r.Body.Messages {
					if strings.Contains(m.Content, "[subagent result]") {
						t.Fatalf("a child of the ended session announced into the next one: %q", m.Content)
					}
				}
			}
		})
	}
}

// waitFor polls cond until it holds, failing the test after 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
