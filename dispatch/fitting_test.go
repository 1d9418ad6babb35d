package dispatch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// withTelegram registers a real Telegram adapter (not polling: sends only)
// talking to a fake Bot API, and makes every room behave as room.
func withTelegram(t *testing.T, h *harness, room channels.Room) *telegramtest.Server {
	t.Helper()
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, err := telegram.New("default", telegram.Config{Token: srv.Token(), APIRoot: srv.URL},
		telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)
	rt := *h.d.Runtime()
	rt.Room = func(channels.Inbound) channels.Room { return room }
	h.d.SetRuntime(&rt)
	return srv
}

var tgSeq int

// tgMsg is a Telegram message to the bot from sender 5 in chat.
func tgMsg(chat int64, text string) channels.Inbound {
	tgSeq++
	ct := channels.Group
	if chat > 0 {
		ct = channels.Direct
	}
	return channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: fmt.Sprint(chat)}, MessageID: fmt.Sprint(300 + tgSeq), ChatType: ct, SenderID: "5", SenderName: "Eve", Mentioned: true,
		Text: text, Time: time.Now()}
}

// TestAckReactionOnWhileTurnRuns: addressed in a group, the bot puts the
// room's ackReaction on the message when the turn starts and takes it off
// once the answer is delivered; DMs and rooms without one get none; a
// reaction Telegram refuses does not cost the answer.
func TestAckReactionOnWhileTurnRuns(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 4)}
	h := newHarness(t, "", m)
	room := channels.DefaultRoom("telegram")
	room.AckReaction = "👀"
	srv := withTelegram(t, h, room)
	msg := tgMsg(-100777, "what do you think?")
	h.handle(msg)
	<-m.started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := srv.WaitReactions(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ChatID != -100777 || got[0].MessageID != 300+tgSeq || !slices.Equal(got[0].Emoji, []string{"👀"}) {
		t.Fatalf("while the turn runs: reactions %+v", got)
	}
	if n := len(srv.Sent()); n != 0 {
		t.Fatalf("%d messages sent before the answer", n)
	}
	close(m.block)
	h.drained()
	// The records finish with the last chunk's mark; the reaction comes off
	// right after.
	if got, err = srv.WaitReactions(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[1].Emoji) != 0 || got[1].MessageID != got[0].MessageID {
		t.Fatalf("after the answer: reactions %+v, want the 👀 then its removal", got)
	}
	if sent := srv.Sent(); len(sent) != 1 || sent[0].Text != "re: [Eve] what do you think?" {
		t.Fatalf("sent %+v", sent)
	}

	// A DM is addressed by nature: no reaction.
	h.handle(tgMsg(4242, "hi"))
	h.drained()
	// Telegram refuses the reaction: the turn is answered anyway.
	srv.FailNext("setMessageReaction", telegramtest.Failure{Code: 400, Description: "Bad Request: REACTION_INVALID"})
	again := tgMsg(-100777, "again")
	h.handle(again)
	h.drained()
	if n := len(srv.Sent()); n != 3 {
		t.Errorf("%d messages sent, want 3 answers", n)
	}
	got, err = srv.WaitReactions(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if last := got[2]; len(got) != 3 || len(last.Emoji) != 0 || fmt.Sprint(last.MessageID) != again.MessageID {
		t.Errorf("reactions %+v: want no reaction in the DM, only the removal after the refused one", got)
	}
}
