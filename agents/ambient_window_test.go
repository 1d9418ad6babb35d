package agents

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// TestAmbientModelWindowPrunesNotCompacts: a room's ambientModel (a
// cheaper model with a 32k window) reads a group whose session runs on a
// 200k model. The ambient turn was sent the history sized for 200k: the
// small model refused it, and the overflow compaction summarised the
// group's history away for the main model too. The ambient turn's request
// is pruned to its own model's window; the session is not compacted.
func TestAmbientModelWindowPrunesNotCompacts(t *testing.T) {
	const small = 32000
	srv, p := fakeOpenAI(t)
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		size := 0
		for _, m := range r.Body.Messages {
			size += len(m.Content)
		}
		if r.Body.Model == "mini" && size/4 > small {
			return openaitest.Reply{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "maximum context length is 32000 tokens"}
		}
		if r.Body.Messages[0].Content == summarySystemPrompt {
			return openaitest.Reply{Text: "a summary"}
		}
		return openaitest.Reply{Text: "ok " + r.Body.Model}
	})
	h := newHarnessWith(t, Defaults{}, []Agent{{ID: "main", Model: Model{Primary: "oa/big"}}}, nil, map[string]llm.Provider{"oa": p})
	h.r.windows = ContextWindows{"oa/big": 200000, "oa/mini": small}
	k := h.key("main", "1")
	ctx := context.Background()
	for range 8 { // ~9k tokens a turn: 72k in all, well within 200k
		if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(strings.Repeat("group chat ", 2700))}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Ambient: true, Model: "oa/mini", Inputs: []sessions.Message{user("anyone around?")}})
	if err != nil || res.Text != "ok mini" {
		t.Fatalf("ambient turn: %q, %v", res.Text, err)
	}
	if n := h.transcript("main", k).compactions(); n != 0 {
		t.Errorf("%d compactions of the group's session for the ambient model's window, want 0", n)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	if last.Body.Model != "mini" || last.LastUserText() != "anyone around?" {
		t.Fatalf("last request to %s ending %q", last.Body.Model, last.LastUserText())
	}
}
