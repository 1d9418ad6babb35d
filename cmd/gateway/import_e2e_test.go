package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/internal/openclaw/openclawtest"
)

// TestImportOpenClawThenAnswer: after `gateway import openclaw`, the
// daemon answers the next message of an imported session with the
// imported history in the model request — the DM main session (dmScope
// main, as OpenClaw's default) with its compaction summary first, and a
// forum topic whose imported group activation "always" admits a message
// without a mention.
func TestImportOpenClawThenAnswer(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	// The fixture's sessions are from 2026-09: a pruneAfter that keeps
	// them current (the import warns about the default's).
	// The topic's imported model override names anthropic/claude-sonnet:
	// a provider of that name (the fake) serves it.
	yaml := strings.Replace(e2eConfig(stateDir, tg, model), "providers:\n",
		"providers:\n  anthropic: {type: openai, baseURL: \""+model.BaseURL()+"\", apiKey: test-key, maxRetries: 1}\n", 1) +
		"session: {dmScope: main, maintenance: {pruneAfter: 87600h}}\n"
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	gw(t, cfg, "import", "openclaw", "--from", oc, "--agent", "main").want(t, 0)
	startDaemon(t, yaml)

	tg.DM(555, "What about Sunday?")
	waitReply(t, tg, "reply: What about Sunday?")
	req, ok := lastRequestFor(model, "What about Sunday?")
	if !ok {
		t.Fatal("the model never saw the message")
	}
	got := convo(req)
	want := []string{"assistant: Sunny, 21°C.", "user: And tomorrow?", "assistant: Rain tomorrow.", "user: What about Sunday?"}
	if len(got) != 5 || !strings.Contains(got[0], "The user asked about the weather in Paris: sunny.") ||
		strings.Join(got[1:], "|") != strings.Join(want, "|") {
		t.Fatalf("the request's history = %q, want the compaction summary then %q", got, want)
	}

	tg.Topic(-1001, 7, 333, "status please")
	waitReply(t, tg, "status please")
	req, _ = lastRequestFor(model, "status please")
	got = convo(req)
	if len(got) < 3 || got[0] != "user: ping the topic" || got[1] != "assistant: Pong from the topic." {
		t.Fatalf("the topic request's history = %q, want the imported exchange first", got)
	}
	if req.Body.Model != "claude-sonnet" {
		t.Errorf("the topic's request went to model %q, want its imported override claude-sonnet", req.Body.Model)
	}
}
