package gatewayd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
)

// accessReloadYAML is a Telegram bot whose group -100777 admits the senders
// listed in allowFrom (no mention needed), answered by a fake model.
func accessReloadYAML(state string, tg *telegramtest.Server, model *openaitest.Server, groupRule string) string {
	return reloadYAML(state, fmt.Sprintf(`channels:
  telegram:
    accounts:
      default:
        token: %q
        apiRoot: %q
        pollTimeoutSeconds: 1
        dmPolicy: disabled
        groupPolicy: allowlist
        groups: {"-100777": %s}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
messages: {queue: {mode: collect, debounce: 50ms}}
`, tg.Token(), tg.URL, groupRule, model.BaseURL()))
}

// longTurnModel is a fake model that holds its first answer to "long
// question" ("long answer") until release is closed, and answers every
// other message "reply: <text>" at once.
func longTurnModel(t *testing.T) (model *openaitest.Server, release chan struct{}) {
	model = openaitest.NewServer(t)
	release = make(chan struct{})
	var held atomic.Bool
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		text := r.LastUserText()
		if strings.Contains(text, "long question") && held.CompareAndSwap(false, true) {
			return openaitest.Reply{Text: "long answer", Hold: release}
		}
		return openaitest.Reply{Text: "reply: " + text}
	})
	return model, release
}

// queueBehindLongTurn has sender 100 start a long turn in group -100777
// (longTurnModel holds it) and then send text, which waits in the lane
// once journaled.
func queueBehindLongTurn(ctx context.Context, t *testing.T, tg *telegramtest.Server, model *openaitest.Server, text string) {
	t.Helper()
	tg.Group(-100777, 100, "long question")
	waitFor(t, func() bool { return model.Calls() >= 1 })
	id := tg.Group(-100777, 100, text)
	if err := tg.WaitConfirmed(ctx, id); err != nil { // journaled: accepted
		t.Fatalf("queued %q not accepted: %v", text, err)
	}
}

// observedLogger tees the test's log into an observer the test reads.
func observedLogger(t *testing.T) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.DebugLevel)
	tl := zaptest.NewLogger(t)
	return zap.New(zapcore.NewTee(tl.Core(), core)), logs
}

// TestReloadRevokedSenderQueuedMessageNeverReachesAgent: a group member's
// message accepted while the allowlist admitted them and queued behind a
// long turn does not reach the agent once a reload has removed them (or
// switched the group off): it is dropped with a log line naming it. The
// running turn is not cut, and the room's other members go on.
func TestReloadRevokedSenderQueuedMessageNeverReachesAgent(t *testing.T) {
	for _, tc := range []struct {
		name, after, reason string
	}{
		{"sender removed from the group's allowFrom", `{requireMention: false, allowFrom: ["200"]}`, "sender_not_allowed"},
		{"group switched off", `{requireMention: false, enabled: false}`, "group_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := telegramtest.Start(t, telegramtest.Options{})
			model, release := longTurnModel(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "gateway.yaml")
			state := filepath.Join(dir, "state")
			if err := os.WriteFile(path, []byte(accessReloadYAML(state, tg, model,
				`{requireMention: false, allowFrom: ["100", "200"]}`)), 0o600); err != nil {
				t.Fatal(err)
			}
			log, logs := observedLogger(t)
			d, _ := startDaemonLogged(t, path, &fakeClock{}, log)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			queueBehindLongTurn(ctx, t, tg, model, "queued secret")
			if err := os.WriteFile(path, []byte(accessReloadYAML(state, tg, model, tc.after)), 0o600); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				d.mu.Lock()
				defer d.mu.Unlock()
				g := d.cfg.Channels.Telegram.Accounts["default"].Rules.Groups["-100777"]
				return len(g.AllowFrom) == 1 || g.Enabled != nil
			})
			close(release) // the running turn ends with its answer

			if _, err := tg.WaitSent(ctx, 1); err != nil {
				t.Fatalf("the running turn's answer: %v", err)
			}
			if got := tg.Sent()[0].Text; !strings.Contains(got, "long answer") {
				t.Fatalf("first reply %q, want the running turn's answer", got)
			}
			// The revoked message is dropped with a log line (or, wrongly,
			// reaches the model): whichever comes first decides.
			dropped := func() bool {
				for _, e := range logs.FilterMessageSnippet("no longer admits").All() {
					if e.ContextMap()["sender_id"] == "100" && e.ContextMap()["reason"] == tc.reason {
						return true
					}
				}
				return false
			}
			waitFor(t, func() bool { return dropped() || reachedModel(model, "queued secret") })
			if reachedModel(model, "queued secret") {
				t.Fatal("a message of a revoked sender reached the model")
			}
			if tc.reason == "sender_not_allowed" {
				// A member still allowed is answered on the same lane.
				tg.Group(-100777, 200, "still here")
				sent, err := tg.WaitSent(ctx, 2)
				if err != nil {
					t.Fatalf("the allowed member's answer: %v", err)
				}
				if !strings.Contains(sent[1].Text, "still here") {
					t.Fatalf("second reply %q", sent[1].Text)
				}
			}
			for _, s := range tg.Sent() {
				if strings.Contains(s.Text, "queued secret") {
					t.Fatalf("a reply answered the revoked message: %q", s.Text)
				}
			}
			if reachedModel(model, "queued secret") {
				t.Fatal("a message of a revoked sender reached the model")
			}
		})
	}
}

// reachedModel reports whether any request to the model held text.
func reachedModel(model *openaitest.Server, text string) bool {
	for _, r := range model.Requests() {
		for _, m := range r.Body.Messages {
			if strings.Contains(m.Content+fmt.Sprint(m.MultiContent), text) {
				return true
			}
		}
	}
	return false
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never met")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRevokedSenderJournaledMessageDroppedAfterRestart: a message accepted
// before a stop and still pending in the journal is not run at the next
// start when the config edited meanwhile no longer admits its sender. (The
// message whose turn the stop cut is in the transcript already: the model
// saw it before the edit, and the room's next turn has it as history.)
func TestRevokedSenderJournaledMessageDroppedAfterRestart(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	release := make(chan struct{})
	defer close(release)
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Text: "long answer", Hold: release} // cut by the stop
		}
		return openaitest.Reply{Text: "reply: " + r.LastUserText()}
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	write := func(rule string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(accessReloadYAML(state, tg, model, rule)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{requireMention: false, allowFrom: ["100", "200"]}`)
	run := func(log *zap.Logger) (stop func()) {
		t.Helper()
		cfg, err := configs.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ready := make(chan string, 1)
		d, err := New(cfg, Options{ConfigPath: path, Logger: log, Grace: 100 * time.Millisecond,
			OnReady: func(a string) { ready <- a }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("daemon exited: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("not ready")
		}
		stopped := false
		stop = func() {
			if !stopped {
				stopped = true
				cancel()
				<-done
			}
		}
		t.Cleanup(stop)
		return stop
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	stop := run(zaptest.NewLogger(t))
	tg.Group(-100777, 100, "long question")
	waitFor(t, func() bool { return model.Calls() >= 1 })
	if err := tg.WaitConfirmed(ctx, tg.Group(-100777, 100, "queued secret")); err != nil {
		t.Fatal(err)
	}
	stop()

	write(`{requireMention: false, allowFrom: ["200"]}`)
	log, logs := observedLogger(t)
	run(log)
	tg.Group(-100777, 200, "still here")
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatalf("the allowed member's answer: %v", err)
	}
	if !strings.Contains(sent[0].Text, "still here") {
		t.Fatalf("reply %q", sent[0].Text)
	}
	if reachedModel(model, "queued secret") {
		t.Fatal("a message of a revoked sender reached the model after the restart")
	}
	if logs.FilterMessageSnippet("no longer admits").Len() == 0 {
		t.Fatal("no log line for the dropped message")
	}
}
