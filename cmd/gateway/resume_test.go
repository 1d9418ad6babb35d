package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
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
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cfg, "", zaptest.NewLogger(t), &deps{Grace: 200 * time.Millisecond,
			OnReady: func(a string) { ready <- a }})
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
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
	cancel() // SIGTERM while the model is still answering
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop")
	}
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
