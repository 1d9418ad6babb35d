package gatewayd

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
)

// TestResumedWorkRunsBeforeNewMessages: a chat's message the last run
// accepted and did not answer (its turn was cut by the stop) is answered
// on its own, and before the chat's message that waited in Telegram while
// the daemon was down. The journal's Pending is held until that newer
// message has been accepted, or 2 s: with the channels started before
// Resume (the order before this test), the newer message was polled and
// run first, its model request carried both messages and one reply ("ack
// old\n\nnew") answered the two; what a PostgreSQL restart did whenever
// its take-over query lost the race with the first poll.
func TestResumedWorkRunsBeforeNewMessages(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	var holdFirst atomic.Bool
	holdFirst.Store(true)
	asked := make(chan struct{})
	model.SetReply(func(_ int, r openaitest.Request) openaitest.Reply {
		if holdFirst.CompareAndSwap(true, false) {
			close(asked)
			return openaitest.Reply{Text: "never sent", Hold: never}
		}
		return openaitest.Reply{Text: "ack " + r.LastUserText()}
	})
	state := filepath.Join(t.TempDir(), "state")
	cfg := func() *configs.Config {
		c, err := configs.LoadBytes([]byte(fmt.Sprintf(`stateDir: %s
http: {listen: "127.0.0.1:0"}
channels:
  telegram:
    accounts:
      default: {token: %q, apiRoot: %q, pollTimeoutSeconds: 1, dmPolicy: open, allowFrom: ["*"]}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
messages:
  queue: {mode: followup}
  inbound: {byChannel: {telegram: {}}}
`, state, tg.Token(), tg.URL, model.BaseURL())), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const chat = 5151

	// The first run accepts "old" and is stopped while its model thinks:
	// the record stays for the next start.
	_, stop := startTestDaemon(t, cfg(), Options{Logger: zaptest.NewLogger(t), Grace: 200 * time.Millisecond})
	tg.DM(chat, "old")
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the first run never asked the model about \"old\"")
	}
	stop()
	if n := len(tg.Sent()); n != 0 {
		t.Fatalf("the stopped run sent %d messages, want none", n)
	}

	// "new" waits in Telegram; the next start's Pending waits until it was
	// accepted (or 2 s).
	newID := tg.DM(chat, "new")
	open := func(ctx context.Context, c *configs.Config) (sessions.Backend, error) {
		b, err := OpenBackend(ctx, c, BackendOptions{Logger: zaptest.NewLogger(t)})
		if err != nil {
			return nil, err
		}
		return heldPendingBackend{Backend: b, before: func() {
			wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = tg.WaitConfirmed(wctx, newID)
		}}, nil
	}
	_, stop = startTestDaemon(t, cfg(), Options{Logger: zaptest.NewLogger(t), OpenBackend: open})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		var got []string
		for _, s := range tg.Sent() {
			got = append(got, s.Text)
		}
		t.Fatalf("want two replies, got %q: %v", got, err)
	}
	time.Sleep(200 * time.Millisecond) // a third would show now
	sent := tg.Sent()
	var got []string
	for _, s := range sent {
		got = append(got, s.Text)
	}
	if len(got) != 2 || got[0] != "ack old" || got[1] != "ack new" {
		t.Fatalf("replies %q, want [\"ack old\" \"ack new\"]: the resumed message first, each answered on its own", got)
	}
}

// heldPendingBackend is a backend whose journal calls before at the start
// of Pending (what Resume reads).
type heldPendingBackend struct {
	sessions.Backend
	before func()
}

func (b heldPendingBackend) Journal() sessions.Delivery {
	return heldPendingJournal{Delivery: b.Backend.Journal(), before: b.before}
}

// heldPendingJournal keeps the journal's deferred accept (the files
// backend's: what the Telegram poller's batches use).
type heldPendingJournal struct {
	sessions.Delivery
	before func()
}

func (j heldPendingJournal) Pending() ([]sessions.Record, error) {
	j.before()
	return j.Delivery.Pending()
}

func (j heldPendingJournal) AcceptDeferred(ctx context.Context, rec sessions.Record) (bool, func() error, error) {
	da, ok := j.Delivery.(interface {
		AcceptDeferred(context.Context, sessions.Record) (bool, func() error, error)
	})
	if !ok {
		dup, err := j.Delivery.Accept(ctx, rec)
		return dup, func() error { return nil }, err
	}
	return da.AcceptDeferred(ctx, rec)
}
