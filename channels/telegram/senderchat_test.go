package telegram_test

import (
	"testing"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// Telegram's placeholder senders of messages sent on behalf of a chat: it
// puts them in "from" (for old clients) and the real sender in
// "sender_chat".
const (
	groupAnonymousBot = int64(1087968824) // an anonymous administrator
	channelBot        = int64(136817688)  // a member posting as a channel
)

// TestMessagesOnBehalfOfAChat: a message an anonymous administrator sent
// (as the group) or a member sent as one of their channels comes from the
// chat in sender_chat, not from the placeholder user Telegram puts in
// "from": the anonymous administrator counts as an administrator without
// asking Telegram, and two channels are two senders, not one.
func TestMessagesOnBehalfOfAChat(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, rec := startPolling(t, srv, baseConfig(srv))
	mention := "@" + srv.BotUserName() + " "
	onBehalf := func(from int64, fromName string, chat map[string]any, text string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, Text: mention + text, Extra: map[string]any{
			"from":        map[string]any{"id": from, "is_bot": true, "first_name": fromName},
			"sender_chat": chat,
		}}
	}
	groupChat := map[string]any{"id": group, "type": "supergroup", "title": "Builders"}
	srv.AddMessage(onBehalf(groupAnonymousBot, "Group", groupChat, "/reset"))
	srv.AddMessage(onBehalf(channelBot, "Channel", map[string]any{"id": -1001, "type": "channel", "title": "News"}, "one"))
	u, _ := srv.AddMessage(onBehalf(channelBot, "Channel", map[string]any{"id": -1002, "type": "channel", "title": "Blog"}, "two"))
	waitConfirmed(t, srv, u)

	got := rec.accepted()
	if len(got) != 3 {
		t.Fatalf("accepted %d messages, want 3: %+v", len(got), got)
	}
	want := []struct{ id, name string }{{id(int(group)), "Builders"}, {"-1001", "News"}, {"-1002", "Blog"}}
	for i, w := range want {
		if got[i].SenderID != w.id || got[i].SenderName != w.name {
			t.Errorf("message %d (%q) from %s %q, want %s %q", i, got[i].Text, got[i].SenderID, got[i].SenderName, w.id, w.name)
		}
	}
	if admin, err := a.IsAdmin(testCtx(t), got[0]); err != nil || !admin {
		t.Errorf("anonymous administrator: IsAdmin = %v, %v; want true", admin, err)
	}
	if admin, err := a.IsAdmin(testCtx(t), got[1]); err != nil || admin {
		t.Errorf("member posting as a channel: IsAdmin = %v, %v; want false", admin, err)
	}
	if l := srv.MemberLookups(); len(l) != 0 {
		t.Errorf("getChatMember asked %+v, want no request", l)
	}
}
