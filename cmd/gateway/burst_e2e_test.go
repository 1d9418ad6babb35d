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
// Telegram client sent as three messages reaches the model once, rejoined
// exactly, in one turn with one reply — in a DM, and in a group that
// requires a mention, where only the first fragment carries it. The
// windows are long and maxParts is 3, so the third fragment completes the
// input whatever the machine's speed.
func TestTelegramSplitPasteIsOneTurn(t *testing.T) {
	// Numbered tokens without white space: Telegram trims each message,
	// so a cut at a space would lose it before the gateway sees it.
	var b strings.Builder
	for i := 0; b.Len() < 9000; i++ {
		fmt.Fprintf(&b, "tok%05d;", i)
	}
	paste := b.String()[:9000]
	for _, chat := range []int64{4711, -100900} {
		t.Run(fmt.Sprint(chat), func(t *testing.T) {
			tg := telegramtest.Start(t, telegramtest.Options{})
			model := openaitest.NewServer(t)
			model.SetReply(func(int, openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "read it all"} })
			yaml := e2eConfig(filepath.Join(t.TempDir(), "state"), tg, model) +
				"  inbound: {maxParts: 3, byChannel: {telegram: {debounce: 1m, pasteWindow: 1m}}}\n"
			_, stop := startDaemon(t, yaml)
			cut1, cut2 := 4096, 8192
			first := paste[:cut1]
			if chat < 0 {
				mention := "@" + tg.BotUserName() + " "
				cut1, cut2 = cut1-len(mention), cut2-len(mention)
				first = mention + paste[:cut1]
			}
			for _, part := range []string{first, paste[cut1:cut2], paste[cut2:]} {
				tg.AddMessage(telegramtest.Message{ChatID: chat, FromID: 4711, FromName: "Paula", Text: part})
			}
			waitReply(t, tg, "read it all")
			stop() // drains: anything still queued or held would show below

			reqs := model.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model requests, want 1", len(reqs))
			}
			got := reqs[0].LastUserText()
			if !strings.HasSuffix(got, paste) || strings.Count(got, paste[4000:4200]) != 1 {
				t.Errorf("the model's input (%d characters) does not end with the paste (%d characters) rejoined once",
					len(got), len(paste))
			}
			if got := sentTo(tg, chat); len(got) != 1 {
				t.Errorf("%d messages sent to the chat, want one reply: %+v", len(got), got)
			}
		})
	}
}

// TestTelegramQuickMessagesAreOneTurn: "hi", "how are you", "?" from one
// person are one turn whose input keeps them on three lines, and one
// reply; a command sent among them is answered on its own.
func TestTelegramQuickMessagesAreOneTurn(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	yaml := e2eConfig(filepath.Join(t.TempDir(), "state"), tg, model) +
		"  inbound: {maxParts: 3, byChannel: {telegram: {debounce: 1m}}}\n"
	_, stop := startDaemon(t, yaml)
	const bob = int64(5150)
	tg.DM(bob, "hi")
	tg.DM(bob, "how are you")
	tg.DM(bob, "/help")
	tg.DM(bob, "?")
	tg.DM(bob, "still")
	tg.DM(bob, "there")
	waitReply(t, tg, "reply: ?\nstill\nthere")
	waitReply(t, tg, "reply: hi\nhow are you") // flushed by the command
	stop()
	var inputs []string
	for _, r := range model.Requests() {
		inputs = append(inputs, r.LastUserText())
	}
	if want := []string{"hi\nhow are you", "?\nstill\nthere"}; strings.Join(inputs, "|") != strings.Join(want, "|") {
		t.Errorf("model inputs %q, want %q", inputs, want)
	}
	if got := sentTo(tg, bob); len(got) != 3 || !strings.Contains(got[1].Text, "/new") {
		t.Errorf("sent %+v: want the first reply, /help's answer, the second reply", got)
	}
}
