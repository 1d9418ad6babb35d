package gatewayd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestStopFromSenderNotAllowedIsRefused pins SPEC §6.1 ("commands obey
// the access policy"): /stop from a group member the room's allowFrom does
// not list is refused like any of their messages; the running turn of an
// allowed member goes on and is answered.
func TestStopFromSenderNotAllowedIsRefused(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model, release := longTurnModel(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(accessReloadYAML(state, tg, model, `{requireMention: false, allowFrom: ["100"]}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	startDaemonLogged(t, path, &fakeClock{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tg.Group(-100777, 100, "long question")
	waitFor(t, func() bool { return model.Calls() >= 1 })
	stop := tg.Group(-100777, 300, "/stop")
	if err := tg.WaitConfirmed(ctx, stop); err != nil {
		t.Fatal(err)
	}
	close(release)
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent[0].Text, "long answer") {
		t.Fatalf("first message %q, want the running turn's answer", sent[0].Text)
	}
}
