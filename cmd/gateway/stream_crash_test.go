package main

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

// TestStreamingDraftSurvivesSIGKILL runs the built daemon with streaming
// on and SIGKILLs it while a turn runs and its draft is up (progress: the
// status line; partial: the first words of an answer that then calls a
// tool). After the restart the draft is gone (deleted, or edited to say
// the answer follows), the turn runs again and the chat shows one answer.
func TestStreamingDraftSurvivesSIGKILL(t *testing.T) {
	for _, mode := range []string{"progress", "partial"} {
		t.Run(mode, func(t *testing.T) { streamingKill(t, mode) })
	}
}

func streamingKill(t *testing.T, mode string) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		switch {
		case n == 0 && mode == "partial":
			return openaitest.Reply{Text: "Let me look that up first",
				ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "sessions_list", Arguments: `{}`}}}
		case n == 0, n == 1 && mode == "partial":
			return openaitest.Reply{Hold: hold} // the kill comes during this call
		}
		return openaitest.Reply{Text: "the whole answer"}
	})
	base := t.TempDir()
	if keep := os.Getenv("GATEWAY_STREAM_KEEP"); keep != "" {
		base = filepath.Join(keep, mode)
	}
	d := &crashDaemon{t: t, addr: freeAddr(t), logs: filepath.Join(base, "logs")}
	if err := os.MkdirAll(d.logs, 0o700); err != nil {
		t.Fatal(err)
	}
	d.cfg = filepath.Join(d.logs, "gateway.yaml")
	state := filepath.Join(base, "state")
	yaml := fmt.Sprintf(`stateDir: %s
http: {listen: %q}
log: {level: debug, format: console}
channels:
  telegram:
    accounts:
      default: {token: %q, apiRoot: %q, dmPolicy: open, pollTimeoutSeconds: 1, streaming: {mode: %s}}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
`, state, d.addr, tg.Token(), tg.URL, mode, model.BaseURL())
	if err := os.WriteFile(d.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	t.Cleanup(func() { // whatever ends the test, no daemon outlives it
		if d.cmd.ProcessState == nil {
			d.kill()
		}
	})
	const chat = 5151
	tg.DM(chat, "what do I have?")
	journal := filepath.Join(state, "ingress", "journal.jsonl")
	waitFor(t, 20*time.Second, "the draft and its record", func() bool {
		b, _ := os.ReadFile(journal)
		return len(tg.Visible(chat)) == 1 && strings.Contains(string(b), `"op":"draft"`) &&
			len(model.Requests()) == map[string]int{"progress": 1, "partial": 2}[mode]
	})
	draft := tg.Visible(chat)[0]
	d.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.WaitNoConns(ctx); err != nil {
		t.Fatal(err)
	}
	if vis := tg.Visible(chat); len(vis) != 1 {
		t.Fatalf("before the restart the chat shows %+v, want the draft", vis)
	}

	d.start()
	defer d.stop()
	waitFor(t, 20*time.Second, "the answer", func() bool {
		for _, s := range tg.Visible(chat) {
			if s.Text == "the whole answer" {
				return true
			}
		}
		return false
	})
	waitFor(t, 10*time.Second, "the new turn's draft to go", func() bool {
		for _, s := range tg.Visible(chat) {
			if s.MessageID != draft.MessageID && s.Text != "the whole answer" {
				return false
			}
		}
		return true
	})
	for _, s := range tg.Visible(chat) {
		switch {
		case s.MessageID == draft.MessageID && s.Text != "…the answer follows.":
			t.Errorf("the killed turn's draft still shows %q", s.Text)
		case s.MessageID != draft.MessageID && s.Text != "the whole answer":
			t.Errorf("stray message %q", s.Text)
		}
	}
	answers := 0
	for _, s := range tg.Visible(chat) {
		if s.Text == "the whole answer" {
			answers++
		}
	}
	if answers != 1 {
		t.Errorf("the answer shows %d times, want once", answers)
	}
}
