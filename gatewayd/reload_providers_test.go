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

// TestReloadAmbientModelOnProviderNeedingRestart: an edit that adds a
// provider and makes it a room's ambientModel cannot be applied before a
// restart builds the provider (providers need one). Applied, the room's
// ambient turns asked for a model the running daemon does not have and
// failed, every one, until the restart. The reload is rejected whole
// instead, with an error naming the key and saying so, and the room's
// ambient turns go on running on the model they ran on.
func TestReloadAmbientModelOnProviderNeedingRestart(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	cheap := openaitest.NewServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	rule := `{allowFrom: ["100"], ambient: true, ambientDebounce: 1s%s}`
	before := accessReloadYAML(state, tg, model, fmt.Sprintf(rule, ""))
	if err := os.WriteFile(path, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	startDaemonLogged(t, path, &fakeClock{}, log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg.Group(-100777, 100, "idle chatter")
	waitFor(t, func() bool { return reachedModel(model, "idle chatter") })

	after := strings.Replace(accessReloadYAML(state, tg, model, fmt.Sprintf(rule, ", ambientModel: cheap/mini")),
		"providers:\n", fmt.Sprintf("providers:\n  cheap: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}\n", cheap.BaseURL()), 1)
	if err := os.WriteFile(path, []byte(after), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return logs.FilterMessageSnippet("config reload").Len() > 0 })
	if err := tg.WaitConfirmed(ctx, tg.Group(-100777, 100, "more chatter")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return reachedModel(model, "more chatter") || reachedModel(cheap, "more chatter") })
	rej := logs.FilterMessageSnippet("config reload rejected").All()
	if len(rej) != 1 || !strings.Contains(fmt.Sprint(rej[0].ContextMap()["error"]), `groups.-100777.ambientModel: provider "cheap"`) {
		t.Fatalf("rejections %v, want one naming the ambientModel's provider needing a restart", rej)
	}
}
