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
