package telegram_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestSplitPasteFollowsItsMention: in a group that requires a mention, the
// fragments of a long paste after the first (which alone carries the
// @mention) reach the handler as addressed when they come from the same
// sender within two seconds (Telegram dates); another member's
// unmentioned message in between, the same sender's message after the
// paste ended, and a long message that follows nothing addressed do not.
func TestSplitPasteFollowsItsMention(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	const t0 = int64(1_800_000_000)
	frag := func(c byte) string { return strings.Repeat(string(c), 4096) }
	msg := func(from int64, at int64, text string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, FromID: from, FromName: fmt.Sprint(from), Text: text,
			Extra: map[string]any{"date": at}}
	}
	bot := "@" + srv.BotUserName() + " "
	for _, m := range []telegramtest.Message{
		msg(bob, t0, bot+frag('a')[len(bot):]),
		msg(alice, t0, "unrelated chatter"),
		msg(bob, t0+1, frag('b')),
		msg(bob, t0+1, "the end of the paste"),
		msg(bob, t0+2, "and a remark nobody addressed"),
		msg(alice, t0+30, frag('c')),
		msg(bob, t0+30, bot+frag('d')[len(bot):]),
		msg(bob, t0+40, "too late to follow"),
	} {
		srv.AddMessage(m)
	}
	waitConfirmed(t, srv, 8)
	var got []string
	for _, in := range rec.accepted() {
		if !in.Mentioned {
			t.Errorf("accepted an unaddressed message: %.20q", in.Text)
		}
		got = append(got, fmt.Sprintf("%s:%.1s%d", in.SenderID, in.Text, len(in.Text)))
	}
	want := []string{"222:a4078", "222:b4096", "222:t20", "222:d4078"} // the mention stripped
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("accepted %v, want %v", got, want)
	}
}

// TestSplitPasteWithEmojiFollowsItsMention: Telegram cuts a paste at 4096
// UTF-16 units, and an emoji takes two of them: a fragment full of emoji
// has far fewer characters than units, and the next fragment still
// follows its mention.
func TestSplitPasteWithEmojiFollowsItsMention(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	const t0 = int64(1_800_000_000)
	msg := func(at int64, text string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, FromID: bob, Text: text, Extra: map[string]any{"date": at}}
	}
	bot := "@" + srv.BotUserName() + " "
	first := bot + strings.Repeat("ok 👍 ", 679) // 4092 units, 3413 characters
	srv.AddMessage(msg(t0, first))
	u, _ := srv.AddMessage(msg(t0+1, "the end of the paste"))
	waitConfirmed(t, srv, u)
	var got []string
	for _, in := range rec.accepted() {
		got = append(got, fmt.Sprintf("%.6s", in.Text))
	}
	if want := []string{"ok 👍 o", "the en"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("accepted %q, want %q (the paste's two fragments)", got, want)
	}
}
