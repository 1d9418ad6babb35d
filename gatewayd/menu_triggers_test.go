package gatewayd

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestResetTriggersOffKeepsNewOutOfTheMenus: `resetTriggers: []` turns
// /new and /reset off (they are plain messages for the agent), so the
// command menus the bot publishes must not offer them either: a member
// who taps /new in the menu would otherwise send the model "/new".
func TestResetTriggersOffKeepsNewOutOfTheMenus(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model, _ := longTurnModel(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	yaml := accessReloadYAML(filepath.Join(dir, "state"), tg, model, `{requireMention: false}`) +
		"session: {resetTriggers: []}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	startDaemonFromFile(t, path, &fakeClock{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	menus, err := tg.WaitMyCommands(ctx, 2)
	if err != nil {
		t.Fatalf("menus: %v", err)
	}
	for _, m := range menus {
		if len(m.Commands) == 0 {
			t.Errorf("scope %s: an empty menu", m.Scope)
		}
		for _, c := range m.Commands {
			if c.Command == "new" || c.Command == "reset" {
				t.Errorf("scope %s offers /%s while resetTriggers is empty", m.Scope, c.Command)
			}
		}
	}
}
