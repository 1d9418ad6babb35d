package agents

import (
	"context"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestRefusalIsSaid: a model (or its provider's filter) that declines
// with no text (Anthropic stop_reason "refusal", OpenAI finish_reason
// "content_filter") left the member with silence: an empty reply is not
// sent. The turn says the model declined instead.
func TestRefusalIsSaid(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(int, llm.Request) (sessions.Message, error) {
		return sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopRefusal}, nil
	}
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "1"), Inputs: []sessions.Message{user("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != RefusalText {
		t.Fatalf("reply %q, want %q", res.Text, RefusalText)
	}
}
