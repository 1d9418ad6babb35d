package agents

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// TestSmallWindowKeepsItsHistory: an agent with a 20k window runs (SPEC
// §5: the guard warns below 32k and refuses only below 16k), and with the
// default reserveTokens (20000) window − reserve is 0. The threshold must
// not sit at or below nothing: a short chat of a few small messages keeps
// its history verbatim and makes no summary call, instead of compacting
// before every model call (the bot forgetting each message as the next
// arrives, a summary call per message).
func TestSmallWindowKeepsItsHistory(t *testing.T) {
	srv, p := fakeOpenAI(t)
	summaries := 0
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if len(r.Body.Messages) > 0 && r.Body.Messages[0].Content == summarySystemPrompt {
			summaries++
			return openaitest.Reply{Text: "a summary"}
		}
		return openaitest.DefaultReply(n, r)
	})
	h := newHarnessWith(t, Defaults{}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}, ContextWindow: 20000}}, nil,
		map[string]llm.Provider{"oa": p})
	k := h.key("main", "1")
	ctx := context.Background()
	for i := range 4 {
		if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(fmt.Sprintf("message %d", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if summaries != 0 {
		t.Errorf("%d summary calls for four short messages in a 20k window, want none", summaries)
	}
	c, _ := h.transcript("main", k).Context(ctx)
	if c.Summary != "" || len(c.Messages) != 8 || !strings.Contains(c.Messages[0].Text(), "message 0") {
		t.Errorf("context: summary %q, %d messages, want the 8 messages of the chat verbatim", c.Summary, len(c.Messages))
	}
}

// TestCompactionLeavesRoomForTheNextTurn: in a 32k window (a local
// model's) with keepRecentTurns: 20 (seed 000's rule), the 20 turns kept
// were above the compaction threshold, so once a chat reached it every
// turn compacted again (a summary call and a memory flush per
// message, each folding one more old message in). A compaction keeps at
// most half of what the threshold allows, so the next turn runs without
// one.
func TestCompactionLeavesRoomForTheNextTurn(t *testing.T) {
	srv, p := fakeOpenAI(t)
	summaries := 0
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if len(r.Body.Messages) > 0 && r.Body.Messages[0].Content == summarySystemPrompt {
			summaries++
			return openaitest.Reply{Text: "a summary"}
		}
		return openaitest.DefaultReply(n, r)
	})
	h := newHarnessWith(t, Defaults{Compaction: Compaction{KeepRecentTurns: 20}}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}, ContextWindow: 32000}}, nil,
		map[string]llm.Provider{"oa": p})
	k := h.key("main", "1")
	ctx := context.Background()
	compacted := make([]bool, 40)
	for i := range compacted {
		before := summaries
		text := fmt.Sprintf("message %d %s", i, strings.Repeat("words ", 300)) // ~550 tokens, and as much again in the reply
		if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(text)}}); err != nil {
			t.Fatal(err)
		}
		compacted[i] = summaries > before
		if i > 0 && compacted[i] && compacted[i-1] {
			t.Fatalf("turns %d and %d both compacted (%v): a compaction left no room for the next turn", i-1, i, compacted[:i+1])
		}
	}
	if summaries == 0 {
		t.Fatal("40 turns of ~1.1k tokens in a 32k window never compacted")
	}
}
