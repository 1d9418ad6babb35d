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

// TestReloadRevokedOwnerQueuedCommandRefused: an owner's /reset accepted
// while commands.owners listed them and queued behind a long turn is
// refused, as it would be if it came now, once a reload has removed them
// from the owners: the session is not reset and the room is told why.
func TestReloadRevokedOwnerQueuedCommandRefused(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model, release := longTurnModel(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	yaml := func(owner string) []byte {
		return []byte(accessReloadYAML(state, tg, model, `{requireMention: false}`) +
			"commands: {owners: [\"" + owner + "\"]}\n")
	}
	if err := os.WriteFile(path, yaml("100"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	d, _ := startDaemonLogged(t, path, &fakeClock{}, log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	queueBehindLongTurn(ctx, t, tg, model, "/reset")
	if err := os.WriteFile(path, yaml("200"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		o := d.cfg.Commands.Owners
		return len(o) == 1 && o[0] == "200"
	})
	close(release)

	sent, err := tg.WaitSent(ctx, 2)
	if err != nil {
		t.Fatalf("the running turn's answer and the command's: %v", err)
	}
	if !strings.Contains(sent[0].Text, "long answer") {
		t.Fatalf("first reply %q, want the running turn's answer", sent[0].Text)
	}
	if want := "Only allowed members can use /reset here."; sent[1].Text != want {
		t.Fatalf("the queued /reset of a former owner answered %q, want %q", sent[1].Text, want)
	}
	if n := len(logs.FilterMessageSnippet("no longer privileges its sender").All()); n != 1 {
		t.Errorf("%d log lines for the refused command, want 1", n)
	}
	// The session was not reset: the next message is answered with the
	// long exchange still in its history.
	tg.Group(-100777, 100, "after")
	if _, err := tg.WaitSent(ctx, 3); err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.Body.Messages[0].Content, "long question") {
		t.Errorf("the next turn's history starts with %q: the session was reset", last.Body.Messages[0].Content)
	}
}
