package telegram_test

import (
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestAutomaticForwardsIgnoredByDefault: in a channel's discussion group
// that needs no mention, the copy Telegram posts of every channel post
// (is_automatic_forward) is dropped unless automaticForwards is set; the
// members' own messages still come through.
func TestAutomaticForwardsIgnoredByDefault(t *testing.T) {
	const channelID = -1009999
	forward := telegramtest.Message{ChatID: group, FromID: 777000, FromName: "Telegram", Text: "new channel post",
		Extra: map[string]any{"is_automatic_forward": true,
			"sender_chat":       map[string]any{"id": channelID, "type": "channel", "title": "News"},
			"forward_from_chat": map[string]any{"id": channelID, "type": "channel", "title": "News"}}}
	for _, tc := range []struct {
		name  string
		allow bool
		want  []string
	}{
		{"default", false, []string{"members talk"}},
		{"automaticForwards", true, []string{"new channel post", "members talk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := telegramtest.Start(t, telegramtest.Options{})
			cfg := baseConfig(srv)
			cfg.AutomaticForwards = tc.allow
			a, err := telegram.New("default", cfg, telegram.Options{
				Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(),
				MentionRequired: func(channels.Inbound) bool { return false },
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			run(t, a, rec.handle)
			srv.AddMessage(forward)
			u := srv.Group(group, bob, "members talk")
			waitConfirmed(t, srv, u)
			var got []string
			for _, in := range rec.accepted() {
				got = append(got, in.Text)
			}
			if len(got) != len(tc.want) || got[len(got)-1] != "members talk" || got[0] != tc.want[0] {
				t.Fatalf("accepted %q, want %q", got, tc.want)
			}
		})
	}
}
