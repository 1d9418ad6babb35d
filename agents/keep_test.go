package agents

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// keptAfterCompact runs turns of agent agentID (questions q0, q1, ...),
// compacts, and returns the context's messages after the summary.
func keptAfterCompact(t *testing.T, h *harness, agentID string, turns int) []sessions.Message {
	t.Helper()
	k := h.key(agentID, "1")
	ctx := context.Background()
	for i := range turns {
		if _, err := h.r.Run(ctx, Turn{AgentID: agentID, Key: k, Inputs: []sessions.Message{user(fmt.Sprintf("q%d", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.r.Compact(ctx, agentID, k, ""); err != nil {
		t.Fatal(err)
	}
	c, err := h.transcript(agentID, k).Context(ctx)
	if err != nil || c.Summary == "" {
		t.Fatalf("context after compaction: summary %q, %v", c.Summary, err)
	}
	return c.Messages[1:]
}

// firstUser is the text of the first user message of msgs.
func firstUser(msgs []sessions.Message) string {
	for _, m := range msgs {
		if m.Role == sessions.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// TestCompactionKeepRecentTurns: keepRecentTurns keeps the last N turns
// verbatim (seed 000 keeps ~20): alone it keeps exactly N; beside a small
// keepRecentTokens the longer tail wins; an agent's own compaction block
// replaces the defaults' rule.
func TestCompactionKeepRecentTurns(t *testing.T) {
	big := strings.Repeat("z", 4000) // ~1000 tokens per reply
	for name, tc := range map[string]struct {
		d     Compaction
		agent KeepRecent
		first string // the first kept user message
		n     int    // kept messages
	}{
		"turns alone keep exactly N":      {d: Compaction{KeepRecentTurns: 3}, first: "q5", n: 6},
		"longest of tokens and turns":     {d: Compaction{KeepRecentTokens: 1, KeepRecentTurns: 4}, first: "q4", n: 8},
		"agent's rule replaces defaults'": {d: Compaction{KeepRecentTurns: 3}, agent: KeepRecent{KeepRecentTurns: 2}, first: "q6", n: 4},
		"more turns than the session has": {d: Compaction{KeepRecentTurns: 50}, first: "q7", n: 2}, // must compact: the last turn alone
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Defaults{Compaction: tc.d}, []Agent{{ID: "main", Compaction: tc.agent}}, nil)
			h.p.reply = func(_ int, req llm.Request) (sessions.Message, error) {
				return assistantText("a: " + lastUserText(req.Messages) + " " + big), nil
			}
			kept := keptAfterCompact(t, h, "main", 8)
			if got := firstUser(kept); got != tc.first || len(kept) != tc.n {
				t.Fatalf("kept %d messages from %q, want %d from %q", len(kept), got, tc.n, tc.first)
			}
		})
	}
}

// TestCompactionKeepRecentMessages: keepRecentMessages keeps the last N
// messages (seed 004's history_limit), or a few more so a kept tool
// result keeps its call.
func TestCompactionKeepRecentMessages(t *testing.T) {
	for name, tc := range map[string]struct {
		keep  int
		n     int    // kept messages
		first string // role of the first kept message
	}{
		"on a turn's start":         {keep: 8, n: 8, first: sessions.RoleUser},
		"inside a tool call's pair": {keep: 6, n: 7, first: sessions.RoleAssistant},
		"on a tool call":            {keep: 7, n: 7, first: sessions.RoleAssistant},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Defaults{Compaction: Compaction{KeepRecentMessages: tc.keep}}, []Agent{{ID: "main"}}, nil)
			// Each turn: user, tool call, tool result, answer.
			h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
				if req.Messages[len(req.Messages)-1].Role == sessions.RoleUser {
					return assistantCall(fmt.Sprintf("call-%d", n), "sessions_list", map[string]any{"limit": 1}), nil
				}
				return assistantText("done"), nil
			}
			kept := keptAfterCompact(t, h, "main", 4)
			if len(kept) != tc.n || kept[0].Role != tc.first {
				t.Fatalf("kept %d messages from a %s, want %d from a %s", len(kept), kept[0].Role, tc.n, tc.first)
			}
			checkPaired(t, "kept tail", kept)
		})
	}
}

// TestKeepRecentValidated: a negative keep is refused, naming the key.
func TestKeepRecentValidated(t *testing.T) {
	err := Defaults{Compaction: Compaction{KeepRecentTurns: -1}}.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "compaction.keepRecentTurns -1") {
		t.Fatalf("defaults: err = %v", err)
	}
	err = Agent{ID: "a", Compaction: KeepRecent{KeepRecentMessages: -2}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "compaction.keepRecentMessages -2") {
		t.Fatalf("agent: err = %v", err)
	}
	if d := (Defaults{Compaction: Compaction{KeepRecentTurns: 20}}).WithDefaults(); d.Compaction.KeepRecentTokens != 0 {
		t.Fatalf("keepRecentTurns alone got keepRecentTokens %d, want 0 (the count alone decides)", d.Compaction.KeepRecentTokens)
	}
}
