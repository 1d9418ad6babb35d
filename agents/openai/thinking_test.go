package openai

import (
	"context"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// TestThinkingLevelSetsReasoningEffort: a session's /think level is sent
// as reasoning_effort; off and no level send none.
func TestThinkingLevelSetsReasoningEffort(t *testing.T) {
	srv := openaitest.NewServer(t)
	p := newProvider(t, srv, 0)
	if !llm.Thinks(p) {
		t.Fatal("the openai provider does not report a thinking setting")
	}
	levels := []string{sessions.ThinkingLow, sessions.ThinkingHigh, sessions.ThinkingOff, ""}
	for _, level := range levels {
		if _, err := p.Stream(context.Background(), llm.Request{Model: "o4-mini", Messages: []sessions.Message{user("hi")}, Thinking: level}, nil); err != nil {
			t.Fatalf("%q: %v", level, err)
		}
	}
	want := []string{"low", "high", "", ""}
	for i, r := range srv.Requests() {
		if r.Body.ReasoningEffort != want[i] {
			t.Errorf("level %q: reasoning_effort %q, want %q", levels[i], r.Body.ReasoningEffort, want[i])
		}
	}
}
