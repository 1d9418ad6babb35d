package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/limits"
)

// limitClock is the limiter's fake clock (the dispatcher runs on real time).
type limitClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *limitClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *limitClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// withLimits gives the harness's dispatcher a Limiter on its backend's
// counters; *lim is the current one (a restart builds a new one).
func withLimits(t *testing.T, cfg limits.Config, clk *limitClock, lim **limits.Limiter) harnessOpt {
	return func(h *harness) {
		h.disp = func(o *Options) {
			l, err := limits.New(cfg, nil, limits.Options{Counters: o.Sessions.Limits(), Logger: zaptest.NewLogger(t), Now: clk.now})
			if err != nil {
				t.Fatal(err)
			}
			o.Limits, *lim = l, l
		}
	}
}

// limitGroupMsg is a group message from sender, addressed to the bot.
func limitGroupMsg(sender, text string) channels.Inbound {
	m := in("tg", "-100", text)
	m.ChatType, m.SenderID, m.SenderName = channels.Group, sender, "u"+sender
	return m
}

// modelSaw reports whether any model request held text.
func modelSaw(m *model, text string) bool {
	for _, r := range m.requests() {
		for _, msg := range r.Messages {
			if strings.Contains(msg.Text(), text) {
				return true
			}
		}
	}
	return false
}

// TestLimitsThrottleOneSenderInAGroup: in one group a spammer is held to
// its rate while another member is not; the spammer is told once within
// the notice window, and nothing of a throttled message reaches the model,
// the journal or the transcript. Commands still work.
func TestLimitsThrottleOneSenderInAGroup(t *testing.T) {
	cfg := limits.Default()
	cfg.Defaults.Sender = limits.Scope{Rate: "2/min"}
	clk := &limitClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	var lim *limits.Limiter
	h := newHarness(t, "", nil, withLimits(t, cfg, clk, &lim))
	var refused []string
	for i := 1; i <= 6; i++ {
		msg := limitGroupMsg("1", fmt.Sprintf("spam %d", i))
		err := h.d.Handle(h.ctx, msg)
		switch {
		case i <= 2 && err != nil:
			t.Fatalf("spam %d: %v, want accepted", i, err)
		case i > 2 && !errors.Is(err, channels.ErrRejected):
			t.Fatalf("spam %d: %v, want ErrRejected", i, err)
		case i > 2:
			refused = append(refused, msg.MessageID)
		}
		if i <= 2 {
			h.handle(limitGroupMsg("2", fmt.Sprintf("hello %d", i)))
		}
		clk.add(time.Second)
	}
	clk.add(30 * time.Second)
	h.handle(limitGroupMsg("2", "hello 3")) // the other member, at the same rate, is not throttled
	h.handle(limitGroupMsg("1", "/status")) // commands still work when throttled
	h.drained()

	var notices, replies int
	for _, s := range h.tg.sent() {
		switch {
		case strings.HasPrefix(s.Text, "Slow down: try again in "):
			notices++
			if s.Out.ReplyToID != refused[0] || s.Out.ChatID != "-100" {
				t.Errorf("notice went to chat %s replying to %s; want the first refused message %s in -100", s.Out.ChatID, s.Out.ReplyToID, refused[0])
			}
		case strings.HasPrefix(s.Text, "re: "):
			replies++
		}
	}
	if notices != 1 {
		t.Errorf("%d notices within the notice window, want exactly 1: %q", notices, h.tg.texts())
	}
	if replies != 5 { // spam 1-2, hello 1-3
		t.Errorf("%d answers, want 5 (2 of the spammer's, 3 of the other member's): %q", replies, h.tg.texts())
	}
	if !strings.Contains(strings.Join(h.tg.texts(), "\n"), "Session: agent:main:tg:group:-100") {
		t.Errorf("/status was not answered while throttled: %q", h.tg.texts())
	}
	for i := 3; i <= 6; i++ {
		if modelSaw(h.m, fmt.Sprintf("spam %d", i)) {
			t.Errorf("the model saw throttled message spam %d", i)
		}
	}
	for _, want := range []string{"spam 1", "spam 2", "hello 1", "hello 2", "hello 3"} {
		if !modelSaw(h.m, want) {
			t.Errorf("the model never saw %q", want)
		}
	}
	hist := h.history("agent:main:tg:group:-100")
	for _, m := range hist {
		if strings.Contains(m.Text(), "spam 3") || strings.Contains(m.Text(), "spam 6") {
			t.Errorf("a throttled message is in the transcript: %q", m.Text())
		}
	}
	if st := h.journal().Stats(); st.Pending != 0 {
		t.Errorf("journal pending = %d after drain", st.Pending)
	}

	// After the notice window the spammer is told again, once (the
	// bucket has refilled meanwhile: two pass first).
	clk.add(time.Minute)
	for i := 7; i <= 10; i++ {
		_ = h.d.Handle(h.ctx, limitGroupMsg("1", fmt.Sprintf("spam %d", i)))
	}
	h.drained()
	notices = 0
	for _, s := range h.tg.sent() {
		if strings.HasPrefix(s.Text, "Slow down") {
			notices++
		}
	}
	if notices != 2 {
		t.Errorf("%d notices after a second window, want 2", notices)
	}
}

// TestLimitsBudgetChargedAndKeptAcrossRestart: each turn's usage is
// charged to its sender; once the daily budget is spent the sender is
// refused with the reset time, and a restart (new dispatcher, new limiter
// on the same state) still refuses.
func TestLimitsBudgetChargedAndKeptAcrossRestart(t *testing.T) {
	cfg := limits.Default()
	cfg.Timezone, cfg.ResetAt = "Europe/Berlin", "04:00"
	cfg.Defaults.Sender = limits.Scope{Daily: limits.Budget{Tokens: 3}} // the fake model uses 2 tokens a turn
	clk := &limitClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	var lim *limits.Limiter
	dir := t.TempDir()
	h := newHarness(t, dir, nil, withLimits(t, cfg, clk, &lim))
	h.handle(limitGroupMsg("1", "first"))
	h.drained()
	h.handle(limitGroupMsg("1", "second"))
	h.drained()
	if err := h.d.Handle(h.ctx, limitGroupMsg("1", "third")); !errors.Is(err, channels.ErrRejected) {
		t.Fatalf("third message after 4 of 3 tokens: %v, want refused", err)
	}
	h.handle(limitGroupMsg("2", "other member")) // another sender's budget is their own
	h.drained()
	want := "You've reached today's limit; it resets at 04:00 (Europe/Berlin)."
	if !strings.Contains(strings.Join(h.tg.texts(), "\n"), want) {
		t.Errorf("no notice %q in %q", want, h.tg.texts())
	}
	if err := lim.Flush(context.Background()); err != nil { // what the daemon's Run does at shutdown
		t.Fatal(err)
	}
	h.restart()
	if err := h.d.Handle(h.ctx, limitGroupMsg("1", "after restart")); !errors.Is(err, channels.ErrRejected) {
		t.Fatalf("after a restart: %v, want still refused", err)
	}
	clk.add(16 * time.Hour) // 04:00 Berlin the next day
	h.handle(limitGroupMsg("1", "next day"))
	h.drained()
	if modelSaw(h.m, "third") || modelSaw(h.m, "after restart") {
		t.Errorf("the model saw a refused message")
	}
	if !modelSaw(h.m, "next day") {
		t.Errorf("the budget did not reset at 04:00 Berlin")
	}
}

// TestLimitedCommands: messages and the commands that run the model count
// against the limits; the others always work.
func TestLimitedCommands(t *testing.T) {
	d := &Dispatcher{opts: Options{Providers: []string{"openai"}}}
	for _, tc := range []struct {
		cmd, args string
		want      bool
	}{
		{"", "", true},
		{"compact", "", true},
		{"new", "", false},
		{"new", "openai/gpt-4o", false},
		{"new", "openai/gpt-4o tell me a joke", true},
		{"new", "tell me a joke", true},
		{"reset", "and then", true},
		{"reset", "", false},
		{"status", "", false},
		{"help", "", false},
		{"queue", "followup", false},
		{"history", "5", false},
	} {
		if got := d.limitedCommand(&work{chatMessage: chatMessage{Command: tc.cmd, Args: tc.args}}); got != tc.want {
			t.Errorf("limitedCommand(/%s %s) = %v, want %v", tc.cmd, tc.args, got, tc.want)
		}
	}
}

// A web chat refused by a rate limit ends with the limit's notice, not a
// bare "message refused": the browser has no chat to receive the notice.
func TestLimitsWebChatGetsTheNotice(t *testing.T) {
	cfg := limits.Default()
	cfg.Defaults.Sender = limits.Scope{Rate: "1/min"}
	clk := &limitClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	var lim *limits.Limiter
	h := newHarness(t, "", nil, withLimits(t, cfg, clk, &lim))
	wc := startWeb(t, h)
	if evs := wc.chat(t, "s1", "first"); last(evs) != "done" {
		t.Fatalf("first chat ended with %s", last(evs))
	}
	body := `{"message":"second","sessionId":"s1"}`
	res, err := http.Post(wc.srv.URL+"/api/agents/main/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(msg), "Slow down: try again in ") {
		t.Errorf("throttled web chat: %s %s; want 403 with the limit's notice", res.Status, msg)
	}
}
