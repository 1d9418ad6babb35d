package gatewayd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// agentsReloadYAML is a Telegram bot open to DMs, answered by a fake
// model, with the agents list and bindings given.
func agentsReloadYAML(state string, tg *telegramtest.Server, model *openaitest.Server, agents, bindings string) string {
	return reloadYAML(state, fmt.Sprintf(`channels:
  telegram:
    accounts:
      default: {token: %q, apiRoot: %q, pollTimeoutSeconds: 1, dmPolicy: open}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: %s
bindings: %s
`, tg.Token(), tg.URL, model.BaseURL(), agents, bindings))
}

// TestReloadBindingToAgentNeedingRestart: an edit that adds an agent and
// routes a chat to it (a binding, or the new agent first in the list, so
// the default) cannot be applied before a restart starts the agent. The
// reload is rejected with an error saying so, and the chat keeps its
// running agent instead of getting "This agent is not configured." until
// the restart.
func TestReloadBindingToAgentNeedingRestart(t *testing.T) {
	for _, tc := range []struct{ name, agents, bindings string }{
		{"binding", `[{id: main}, {id: sales}]`, `[{agentId: sales, match: {channel: telegram, peer: {kind: direct, id: "100"}}}]`},
		{"new default agent", `[{id: sales}, {id: main}]`, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := telegramtest.Start(t, telegramtest.Options{})
			model := openaitest.NewServer(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "gateway.yaml")
			state := filepath.Join(dir, "state")
			if err := os.WriteFile(path, []byte(agentsReloadYAML(state, tg, model, `[{id: main}]`, `[]`)), 0o600); err != nil {
				t.Fatal(err)
			}
			log, logs := observedLogger(t)
			startDaemonLogged(t, path, &fakeClock{}, log)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tg.DM(100, "before the edit")
			if _, err := tg.WaitSent(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(agentsReloadYAML(state, tg, model, tc.agents, tc.bindings)), 0o600); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				return logs.FilterMessageSnippet("config reload").Len() > 0
			})
			tg.DM(100, "after the edit")
			sent, err := tg.WaitSent(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sent[1].Text, "reply: after the edit") {
				t.Fatalf("reply after the edit %q, want the running agent's answer", sent[1].Text)
			}
			rej := logs.FilterMessageSnippet("config reload rejected").All()
			if len(rej) != 1 || !strings.Contains(fmt.Sprint(rej[0].ContextMap()["error"]), "restart") {
				t.Fatalf("rejections %v, want one saying the agents need a restart", rej)
			}
		})
	}
}
