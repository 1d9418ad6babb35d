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

// TestReloadedResetTriggersRepublishTheMenus: an operator who turns the
// reset triggers off (or on) while the daemon runs gets menus that follow
// the edit without a restart; an edit that leaves the catalogue as it was
// publishes nothing again.
func TestReloadedResetTriggersRepublishTheMenus(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model, _ := longTurnModel(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	base := accessReloadYAML(state, tg, model, `{requireMention: false}`)
	if err := os.WriteFile(path, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ := startDaemonFromFile(t, path, &fakeClock{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tg.WaitMyCommands(ctx, 2); err != nil {
		t.Fatalf("menus at start: %v", err)
	}
	offers := func(m telegramtest.MyCommands, name string) bool {
		for _, c := range m.Commands {
			if c.Command == name {
				return true
			}
		}
		return false
	}
	if err := os.WriteFile(path, []byte(base+"session: {resetTriggers: []}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	menus, err := tg.WaitMyCommands(ctx, 4)
	if err != nil {
		t.Fatalf("menus after the reload: %v", err)
	}
	for _, m := range menus[2:] {
		if offers(m, "new") || offers(m, "reset") {
			t.Errorf("scope %s still offers /new or /reset after resetTriggers: []", m.Scope)
		}
		if !offers(m, "status") {
			t.Errorf("scope %s: /status missing from the republished menu", m.Scope)
		}
	}
	// An edit that does not change the catalogue publishes nothing.
	edited := accessReloadYAML(state, tg, model, `{requireMention: false, allowFrom: ["100"]}`)
	if err := os.WriteFile(path, []byte(edited+"session: {resetTriggers: []}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.cfg.Channels.Telegram.Accounts["default"].Rules.Groups["-100777"].AllowFrom) == 1
	})
	if err := os.WriteFile(path, []byte(base+"session: {resetTriggers: [/reset]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	menus, err = tg.WaitMyCommands(ctx, 6)
	if err != nil {
		t.Fatalf("menus after the second reload: %v", err)
	}
	if len(menus) != 6 {
		t.Fatalf("%d menus published, want 6 (an unchanged catalogue republished)", len(menus))
	}
	for _, m := range menus[4:] {
		if offers(m, "new") || !offers(m, "reset") {
			t.Errorf("scope %s after resetTriggers: [/reset]: %+v", m.Scope, m.Commands)
		}
	}
}
