package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestTelegramSplitPasteIsOneTurn: a 9,000-character paste that the
// Telegram client sent as three messages (4096 + 4096 + 808 characters)
// reaches the model once, rejoined exactly, in one turn with one reply.
// The windows are long and maxParts is 3, so the third fragment completes
// the input whatever the machine's speed.
func TestTelegramSplitPasteIsOneTurn(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	model.SetReply(func(int, openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "read it all"} })
	yaml := e2eConfig(filepath.Join(t.TempDir(), "state"), tg, model) +
		"  inbound: {maxParts: 3, byChannel: {telegram: {debounce: 1m, pasteWindow: 1m}}}\n"
	_, stop := startDaemon(t, yaml)

	// Numbered tokens without white space: Telegram trims each message,
	// so a cut at a space would lose it before the gateway sees it.
	var b strings.Builder
	for i := 0; b.Len() < 9000; i++ {
		fmt.Fprintf(&b, "tok%05d;", i)
	}
	paste := b.String()[:9000]
	const alice = int64(4711)
	for _, part := range []string{paste[:4096], paste[4096:8192], paste[8192:]} {
		tg.DM(alice, part)
	}
	waitReply(t, tg, "read it all")
	stop() // drains: anything still queued or held would show below

	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	var all strings.Builder
	for _, m := range reqs[0].Body.Messages {
		all.WriteString(m.Content)
	}
	if got := reqs[0].LastUserText(); got != paste {
		t.Errorf("the model's input (%d characters) is not the paste (%d characters) rejoined", len(got), len(paste))
	}
	if n := strings.Count(all.String(), paste[4000:4200]); n != 1 {
		t.Errorf("the paste's middle appears %d times in the request, want once", n)
	}
	if got := sentTo(tg, alice); len(got) != 1 {
		t.Errorf("%d messages sent to the chat, want one reply: %+v", len(got), got)
	}
}
