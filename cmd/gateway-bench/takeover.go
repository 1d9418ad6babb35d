package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// Take-over after SIGKILL (-mode takeover): replica B runs throughout;
// for each run a new replica A starts, receives one message on its
// webhook after a random pause (0–3 s: the kill falls at any phase of B's
// periodic look for orphans, which a fixed schedule would lock onto) and
// starts its turn on a model that does not answer; 100 ms into the turn A
// is SIGKILLed (with -signal stop: SIGSTOPped, resumed and stopped after
// the measurement). Measured from the signal: when B's model is
// asked for the same message (B took A's record over and runs the turn)
// and when its answer reaches the fake Telegram. Each replica has its own
// fake model, so who runs a turn is never in doubt.

// killInTurn is how long A's turn runs before the kill; maxPause bounds
// the random pause before the message.
const (
	killInTurn = 100 * time.Millisecond
	maxPause   = 3 * time.Second
)

// arrivals records when each message "m<k>" first showed up at one place
// (a model's request, a reply to the chat). Safe for concurrent use.
type arrivals struct {
	mu sync.Mutex // guards at and count
	at map[int]time.Time
	// count is how many times each arrived (a reply sent twice counts 2).
	count map[int]int
}

func newArrivals() *arrivals { return &arrivals{at: map[int]time.Time{}, count: map[int]int{}} }

// note records text's message number, if it has one, at t.
func (a *arrivals) note(text string, t time.Time) {
	i := strings.LastIndex(text, "m")
	if i < 0 {
		return
	}
	k, err := strconv.Atoi(strings.TrimSpace(text[i+1:]))
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.count[k] == 0 {
		a.at[k] = t
	}
	a.count[k]++
}

// wait returns when message k arrived, polling until limit.
func (a *arrivals) wait(ctx context.Context, k int, limit time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		a.mu.Lock()
		t, ok := a.at[k]
		a.mu.Unlock()
		if ok {
			return t, true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Time{}, false
}

func (a *arrivals) times(k int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count[k]
}

// recordingModel is a fake model that notes each request's message; delay
// is how long it takes to answer.
func recordingModel(delay time.Duration) (*openaitest.Server, *arrivals) {
	m, got := openaitest.New(), newArrivals()
	m.SetReply(func(_ int, r openaitest.Request) openaitest.Reply {
		got.note(r.LastUserText(), time.Now())
		return openaitest.Reply{Text: "ack " + r.LastUserText(), Deltas: 1, Delay: delay}
	})
	return m, got
}

func takeover(ctx context.Context, o options) (err error) {
	replies := newArrivals()
	tg := telegramtest.NewServer(telegramtest.Options{OnSent: func(m telegramtest.Sent, at time.Time) {
		if m.Method == "sendMessage" && strings.HasPrefix(m.Text, "ack ") {
			replies.note(m.Text, at)
		}
	}})
	defer tg.Close()
	modelA, askedA := recordingModel(time.Hour) // A's turns never end by themselves
	defer modelA.Close()
	modelB, askedB := recordingModel(0)
	defer modelB.Close()

	dir, err := os.MkdirTemp("", "gateway-bench-takeover-")
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	defer func() {
		if !o.keep && err == nil { // a failed run keeps its logs
			os.RemoveAll(dir)
		}
	}()
	db, err := openBenchDB(ctx, o)
	if err != nil {
		return err
	}
	defer db.Close()
	spec := func(name string, model *openaitest.Server) (daemonSpec, error) {
		addr, err := freeAddr()
		return daemonSpec{dir: filepath.Join(dir, name), httpAddr: addr, tg: tg, modelURL: model.BaseURL(),
			streaming: "off", dbURL: db.daemonURL, replicaID: name}, err
	}
	sb, err := spec("replica-b", modelB)
	if err != nil {
		return err
	}
	b, err := startDaemon(o.gateway, "replica-b", sb)
	if err != nil {
		return err
	}
	defer b.Stop()
	if _, err := b.Ready(ctx); err != nil {
		return err
	}
	var started, answered []time.Duration
	for k := range o.runs {
		s, a, err := takeoverRun(ctx, o, k, tg, spec, modelA, askedA, askedB, replies)
		if err != nil {
			return fmt.Errorf("run %d: %w (logs: %s)", k+1, err, dir)
		}
		fmt.Printf("run=%d b_turn_started=%s b_answered=%s (after the SIG%s)\n", k+1,
			s.Round(time.Millisecond), a.Round(time.Millisecond), strings.ToUpper(o.signal))
		started, answered = append(started, s), append(answered, a)
	}
	slices.Sort(started)
	slices.Sort(answered)
	fmt.Printf("takeover signal=%s runs=%d turn_started min=%s p50=%s max=%s answered min=%s p50=%s max=%s\n", o.signal, len(started),
		pct(started, 0), pct(started, 50), pct(started, 100), pct(answered, 0), pct(answered, 50), pct(answered, 100))
	return nil
}

// takeoverRun is run k: a new replica A, message m<k>, SIGKILL (or
// SIGSTOP), B's take-over. It returns the times from the signal to B's
// model request and to the answer.
func takeoverRun(ctx context.Context, o options, k int, tg *telegramtest.Server,
	spec func(string, *openaitest.Server) (daemonSpec, error), modelA *openaitest.Server,
	askedA, askedB, replies *arrivals) (started, answered time.Duration, err error) {
	name := fmt.Sprintf("replica-a%d", k+1)
	sa, err := spec(name, modelA)
	if err != nil {
		return 0, 0, err
	}
	a, err := startDaemon(o.gateway, name, sa)
	if err != nil {
		return 0, 0, err
	}
	defer a.Stop()
	if _, err := a.Ready(ctx); err != nil {
		return 0, 0, err
	}
	time.Sleep(rand.N(maxPause))
	chat := int64(30000 + k)
	raw, ok := tg.Update(tg.DM(chat, "m"+strconv.Itoa(k)))
	if !ok {
		return 0, 0, fmt.Errorf("update of m%d is not in the fake", k)
	}
	poster := newWebhookPoster(ctx, []string{a.httpAddr}, telegram.DefaultConfig().Webhook.Path, 1)
	poster.Post(ctx, chat, 0, raw)
	poster.Close()
	if _, ok := askedA.wait(ctx, k, 30*time.Second); !ok {
		return 0, 0, fmt.Errorf("%s never asked its model for m%d", name, k)
	}
	time.Sleep(killInTurn)
	var hit time.Time
	if o.signal == "stop" {
		hit = a.Freeze()
		defer a.Thaw() // before Stop: a frozen process ignores SIGTERM
	} else {
		hit = a.Kill()
	}
	replyAt, ok := replies.wait(ctx, k, 60*time.Second)
	if !ok {
		return 0, 0, fmt.Errorf("no answer to m%d within 60 s of the SIG%s", k, strings.ToUpper(o.signal))
	}
	startAt, ok := askedB.wait(ctx, k, time.Second)
	if !ok {
		return 0, 0, fmt.Errorf("m%d answered, but replica-b never asked its model", k)
	}
	time.Sleep(300 * time.Millisecond) // a second answer would show now
	if n := replies.times(k); n != 1 {
		return 0, 0, fmt.Errorf("m%d answered %d times", k, n)
	}
	return startAt.Sub(hit), replyAt.Sub(hit), nil
}
