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
	"github.com/gateway/gateway/sessions"
)

// TestReminderInForumTopicFiresInTopic runs the daemon on the Telegram
// and model fakes with a fake clock: "/remind in 2 hours" sent in forum
// topic 7 is answered there; two hours later (the clock moved on) the
// scheduler fires it once, and the agent's reply to it goes to topic 7,
// not to the group's General topic.
func TestReminderInForumTopicFiresInTopic(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: "reply: " + r.LastUserText()}
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	y := fmt.Sprintf(`stateDir: %s
http: {listen: "127.0.0.1:0"}
log: {level: debug, format: console}
channels:
  telegram:
    accounts:
      default:
        token: %q
        apiRoot: %q
        groupPolicy: allowlist
        pollTimeoutSeconds: 1
        groups:
          "-100123": {requireMention: false}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
jobs: {poll: 200ms}
`, filepath.Join(dir, "state"), tg.Token(), tg.URL, model.BaseURL())
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{}
	d, _ := startDaemonFromFile(t, path, clock)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg.Topic(-100123, 7, 42, "/remind in 2 hours stand-up")
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sent[0].Text, "Reminder j") || sent[0].ThreadID != 7 {
		t.Fatalf("/remind answered %q in thread %d", sent[0].Text, sent[0].ThreadID)
	}
	js, err := d.backend.Jobs().ListJobs(ctx, sessions.JobFilter{Active: true})
	if err != nil || len(js) != 1 {
		t.Fatalf("jobs %v, %v", js, err)
	}
	clock.advance(2*time.Hour + time.Minute)
	sent, err = tg.WaitSent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r := sent[1]; !strings.Contains(r.Text, "[Scheduled reminder "+js[0].ID) || !strings.Contains(r.Text, "stand-up") ||
		r.ChatID != -100123 || r.ThreadID != 7 {
		t.Errorf("the reminder's reply %q went to chat %d thread %d, want topic 7 of -100123", r.Text, r.ChatID, r.ThreadID)
	}
	for {
		j, err := d.backend.Jobs().Job(ctx, js[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == sessions.JobDone {
			if j.Fires != 1 {
				t.Errorf("the reminder fired %d times", j.Fires)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the reminder is %s, not done", j.State)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if n := tg.SentCount(); n != 2 {
		t.Errorf("%d messages sent, want the /remind answer and one reply to the reminder", n)
	}
}
