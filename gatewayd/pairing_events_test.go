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

// pairingYAML is a Telegram bot under dmPolicy dm, answered by a fake model.
func pairingYAML(state string, tg *telegramtest.Server, model *openaitest.Server, dm string) string {
	return reloadYAML(state, fmt.Sprintf(`channels:
  telegram:
    accounts:
      default: {token: %q, apiRoot: %q, pollTimeoutSeconds: 1, dmPolicy: %s}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
`, tg.Token(), tg.URL, dm, model.BaseURL()))
}

// TestEditByStrangerIssuesNoSilentPairingCode: an edit of an unknown
// sender's message is no request for access. It used to go through the
// pairing check like a message and create a pairing request whose code
// nobody sent (an edit gets no answer), so the sender's next message was
// refused silently as "pending" for the code's hour.
func TestEditByStrangerIssuesNoSilentPairingCode(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(pairingYAML(state, tg, model, "disabled")), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ := startDaemonLogged(t, path, &fakeClock{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Refused while DMs are off.
	_, msgID := tg.AddMessage(telegramtest.Message{ChatID: 555, Text: "hi"})
	// The operator opens DMs to pairing.
	if err := os.WriteFile(path, []byte(pairingYAML(state, tg, model, "pairing")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.cfg.Channels.Telegram.Accounts["default"].Rules.DMPolicy == "pairing"
	})
	// The stranger edits the refused message, then writes again.
	edit := tg.AddUpdate(map[string]any{"edited_message": tg.MessageObject(
		telegramtest.Message{ChatID: 555, Text: "hi, anyone?"}, msgID)})
	if err := tg.WaitConfirmed(ctx, edit); err != nil {
		t.Fatal(err)
	}
	tg.DM(555, "hello?")
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatalf("the stranger's message got no pairing code: %v", err)
	}
	if !strings.Contains(sent[0].Text, "pairing code") {
		t.Fatalf("answer %q, want the pairing code", sent[0].Text)
	}
	if model.Calls() != 0 {
		t.Fatal("a stranger's message reached the model")
	}
}

// TestRemovedAccountAdmitsNobodyUntilRestart: an account taken out of the
// config while the daemon runs keeps its adapter until a restart (the
// reload says so), but the config in force has no access rules for it:
// nobody it receives reaches an agent. Its messages used to be judged by
// the defaults of an unconfigured account: a sender approved by pairing
// still reached the agent, and strangers were handed pairing codes.
func TestRemovedAccountAdmitsNobodyUntilRestart(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(pairingYAML(state, tg, model, "pairing")), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ := startDaemonLogged(t, path, &fakeClock{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Sender 300 pairs and is approved.
	tg.DM(300, "hi")
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pending, err := d.pairing.List("telegram")
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	if _, err := d.pairing.Approve("telegram", pending[0].Code); err != nil {
		t.Fatal(err)
	}
	// The operator removes the bot's account.
	if err := os.WriteFile(path, []byte(reloadYAML(state, fmt.Sprintf(`providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
`, model.BaseURL()))), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.cfg.Channels.Telegram.Accounts) == 0
	})
	approved := tg.DM(300, "approved secret")
	stranger := tg.DM(555, "stranger")
	for _, id := range []int{approved, stranger} {
		if err := tg.WaitConfirmed(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if reachedModel(model, "approved secret") {
		t.Fatal("a message of a removed account reached the model")
	}
	if n := len(tg.Sent()); n != 1 {
		t.Fatalf("%d messages sent, want only the first pairing code: %+v", n, tg.Sent())
	}
	if pending, err := d.pairing.List("telegram"); err != nil || len(pending) != 0 {
		t.Fatalf("pending after the removal = %v, %v; want none", pending, err)
	}
}
