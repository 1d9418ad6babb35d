package dispatch

import (
	"encoding/json"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
)

// TestWebStreamCarriesToolEvents: when the (fake OpenAI-compatible) model
// calls a tool, the web chat's SSE stream gets `event: tool` with its name
// and arguments before the answer's deltas and the done event (SPEC §7).
func TestWebStreamCarriesToolEvents(t *testing.T) {
	fake := openaitest.NewServer(t)
	fake.Script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "sessions_list", Arguments: `{"limit":5}`}}},
		openaitest.Reply{Text: "you have one session"},
	)
	h := newHarness(t, "", nil)
	ps, err := agents.NewProviders(map[string]llm.ProviderConfig{"fake": fake.ProviderConfig()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	useProvider(t, h, ps["fake"])
	w := startWeb(t, h)
	evs := w.chat(t, "s1", "what sessions do I have?")
	var names []string
	var tool struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	for _, ev := range evs {
		if len(names) == 0 || names[len(names)-1] != ev.Name {
			names = append(names, ev.Name)
		}
		if ev.Name == "tool" {
			if err := json.Unmarshal([]byte(ev.Data), &tool); err != nil {
				t.Fatalf("tool event data %q: %v", ev.Data, err)
			}
		}
	}
	if got := names; len(got) != 4 || got[0] != "turn" || got[1] != "tool" || got[2] != "delta" || got[3] != "done" {
		t.Fatalf("event sequence %v, want turn, tool, delta…, done", got)
	}
	if tool.Name != "sessions_list" || string(tool.Arguments) != `{"limit":5}` {
		t.Errorf("tool event = %+v", tool)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2 (the tool's result went back)", n)
	}
}
