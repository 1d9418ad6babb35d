package gatewayd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// TestReloadBindingMovesPeerQueuedStaysWithItsAgent pins what a binding
// edit does to a peer's work in flight: the edit routes the messages that
// arrive after it. The running turn is not cut, and a message accepted
// before the edit (queued behind that turn) is answered by the agent it
// was accepted for, in the session it was journaled into; the next one
// goes to the new agent.
func TestReloadBindingMovesPeerQueuedStaysWithItsAgent(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	release := make(chan struct{})
	var held atomic.Bool
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		text := r.LastUserText()
		rep := openaitest.Reply{Text: r.Body.Model + " answers: " + text}
		if strings.Contains(text, "long question") && held.CompareAndSwap(false, true) {
			rep.Hold = release
		}
		return rep
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	agents := `[{id: main, model: fake/main-model}, {id: sales, model: fake/sales-model}]`
	write := func(to string) {
		t.Helper()
		b := `[{agentId: ` + to + `, match: {channel: telegram, peer: {kind: direct, id: "100"}}}]`
		if err := os.WriteFile(path, []byte(agentsReloadYAML(state, tg, model, agents, b)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("main")
	log, logs := observedLogger(t)
	startDaemonLogged(t, path, &fakeClock{}, log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tg.DM(100, "long question")
	waitFor(t, func() bool { return model.Calls() >= 1 })
	if err := tg.WaitConfirmed(ctx, tg.DM(100, "queued before the edit")); err != nil {
		t.Fatal(err)
	}
	write("sales")
	waitFor(t, func() bool { return logs.FilterMessage("config reloaded").Len() > 0 })
	close(release)
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	tg.DM(100, "sent after the edit")
	sent, err := tg.WaitSent(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"main-model answers: long question", "main-model answers: queued before the edit", "sales-model answers: sent after the edit"}
	for i, w := range want {
		if !strings.Contains(sent[i].Text, w) {
			t.Fatalf("reply %d = %q, want %q", i, sent[i].Text, w)
		}
	}
}
