package anthropic

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestThinkingLevelSetsBudget: a session's /think level becomes the
// request's thinking budget, with max_tokens above it; off sends none; a
// signed thinking block of an earlier answer goes back with its
// signature, an unsigned one does not go back at all.
func TestThinkingLevelSetsBudget(t *testing.T) {
	f := newFake(t, reply{text: "a"}, reply{text: "b"})
	p := newProvider(t, f, 0)
	if !llm.Thinks(p) {
		t.Fatal("the anthropic provider does not report a thinking setting")
	}
	prior := sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{
		{Type: sessions.BlockThinking, Thinking: "hmm", Signature: "sig-1"},
		{Type: sessions.BlockThinking, Thinking: "unsigned"},
		{Type: sessions.BlockText, Text: "earlier"},
	}}
	msgs := []sessions.Message{user("q1"), prior, user("q2")}
	for _, level := range []string{sessions.ThinkingHigh, sessions.ThinkingOff} {
		if _, err := p.Stream(context.Background(), llm.Request{Model: "claude-test", Messages: msgs, Thinking: level}, nil); err != nil {
			t.Fatalf("%s: %v", level, err)
		}
	}
	high, off := f.requests()[0], f.requests()[1]
	th, _ := high["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(llm.ThinkingBudgetHigh) {
		t.Errorf("high: thinking = %v, want enabled with budget %d", high["thinking"], llm.ThinkingBudgetHigh)
	}
	if mt, _ := high["max_tokens"].(float64); mt <= float64(llm.ThinkingBudgetHigh) {
		t.Errorf("high: max_tokens %v is not above the budget", high["max_tokens"])
	}
	if _, ok := off["thinking"]; ok {
		t.Errorf("off: thinking = %v, want none sent", off["thinking"])
	}
	b, _ := json.Marshal(high["messages"])
	var sent []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &sent); err != nil {
		t.Fatal(err)
	}
	var thinking []string
	for _, m := range sent {
		for _, c := range m.Content {
			if c.Type == "thinking" {
				thinking = append(thinking, c.Thinking+"/"+c.Signature)
			}
		}
	}
	if len(thinking) != 1 || thinking[0] != "hmm/sig-1" {
		t.Errorf("thinking blocks sent back: %q, want only the signed one", thinking)
	}
}

// TestThinkingRefusedByModel: a model that refuses a thinking budget (a
// 400 naming thinking) gets the request again without it, and later
// requests to that model leave it out from the start, while another model
// still gets it: a /think level carried across /model does not fail turns.
func TestThinkingRefusedByModel(t *testing.T) {
	f := newFake(t, reply{status: 400, errType: "invalid_request_error", errMsg: "thinking: extended thinking is not supported by this model"},
		reply{text: "a"}, reply{text: "b"}, reply{text: "c"})
	p := newProvider(t, f, 0)
	for i, model := range []string{"claude-3-haiku", "claude-3-haiku", "claude-opus"} {
		m, err := p.Stream(context.Background(), llm.Request{Model: model, Messages: []sessions.Message{user("q")}, Thinking: sessions.ThinkingHigh}, nil)
		if want := string(rune('a' + i)); err != nil || m.Text() != want {
			t.Fatalf("request %d (%s): %q, %v; want %q", i, model, m.Text(), err, want)
		}
	}
	var got []bool
	for _, b := range f.requests() {
		got = append(got, b["thinking"] != nil)
	}
	if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
		t.Errorf("thinking sent per request %v, want %v", got, want)
	}
}
