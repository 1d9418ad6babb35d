package agents

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// TestHugeFirstMessage pins a session whose only message is larger than
// the window: there is nothing before it to compact, so the turn ends
// with the "too long" notice (no summary call, no hang), the message
// stays in the transcript, and the next message is answered — its
// compaction summarises the huge one away (a note: it cannot be
// summarised) instead of the session failing every turn until /new.
func TestHugeFirstMessage(t *testing.T) {
	srv, p := fakeOpenAI(t)
	const window = 32000
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		size := 0
		for _, m := range r.Body.Messages {
			size += len(m.Content)
		}
		if size > window*3 {
			return openaitest.Reply{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "maximum context length is 32000 tokens"}
		}
		return openaitest.DefaultReply(n, r)
	})
	h := newHarnessWith(t, Defaults{ContextWindow: window}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}}}, nil,
		map[string]llm.Provider{"oa": p})
	k := h.key("main", "1")
	ctx := context.Background()
	huge := strings.Repeat("word ", window) // ~48k tokens estimated
	_, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(huge)}})
	if err == nil || !strings.Contains(UserMessage(err), "too long") {
		t.Fatalf("err = %v (%q), want the too-long notice", err, UserMessage(err))
	}
	res, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("shorter question")}})
	if err != nil || !strings.HasSuffix(res.Text, "shorter question") || strings.Contains(res.Text, "word word") {
		t.Fatalf("next message: %.300q, %v", res.Text, err)
	}
	c, _ := h.transcript("main", k).Context(ctx)
	if !strings.Contains(c.Summary, "Summary unavailable") {
		t.Errorf("summary %q, want the note for the message that could not be summarised", c.Summary)
	}
	hist, _ := h.transcript("main", k).History(ctx)
	if len(hist) != 3 || hist[0].Text() != huge {
		t.Fatalf("transcript holds %d messages, want the huge one kept and the next exchange", len(hist))
	}
}
