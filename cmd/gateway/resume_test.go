package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
)

// TestAcceptedMessageSurvivesStopMidTurn stops the daemon while the model
// is still answering an accepted message (Telegram already acknowledged it),
// then starts it again: the turn runs again and the message is answered
// exactly once.
func TestAcceptedMessageSurvivesStopMidTurn(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Hold: hold}
		}
		return openaitest.DefaultReply(n, r)
	})
	yaml := e2eConfig(filepath.Join(t.TempDir(), "state"), tg, model)
	cfg, err := configs.LoadBytes([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runDaemonUntilReady(t, cfg, gatewayd.Options{Grace: 200 * time.Millisecond})
	id := tg.DM(111, "do not lose me")
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := tg.WaitConfirmed(wctx, id); err != nil {
		t.Fatalf("update never acknowledged: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); len(model.Requests()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("model never called")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop() // SIGTERM while the model is still answering; Run must return nil
	if n := len(tg.Sent()); n != 0 {
		t.Fatalf("%d replies before restart, want 0", n)
	}

	startDaemon(t, yaml)
	waitReply(t, tg, "reply: do not lose me")
	time.Sleep(300 * time.Millisecond)
	if n := len(sentTo(tg, 111)); n != 1 {
		t.Fatalf("%d replies after restart, want exactly 1: %+v", n, tg.Sent())
	}
	req, _ := lastRequestFor(model, "do not lose me")
	if got := convo(req); len(got) != 1 {
		t.Errorf("replayed turn sent %q, want the message once", got)
	}
}
