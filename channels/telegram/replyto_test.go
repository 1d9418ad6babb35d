package telegram_test

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestReplyToMode: a reply of three messages quotes the message it
// answers in its first chunk (first, the default), in every chunk (all) or
// in none (off).
func TestReplyToMode(t *testing.T) {
	long := strings.Repeat("a", 4000) + "\n\n" + strings.Repeat("b", 4000) + "\n\n" + strings.Repeat("c", 100)
	for mode, want := range map[string][]int{
		"":                    {55, 0, 0},
		channels.ReplyToFirst: {55, 0, 0},
		channels.ReplyToAll:   {55, 55, 55},
		channels.ReplyToOff:   {0, 0, 0},
	} {
		t.Run("mode="+mode, func(t *testing.T) {
			srv := telegramtest.Start(t, telegramtest.Options{})
			a := newSender(t, srv)
			if err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: long, ReplyToID: "55", ReplyToMode: mode}); err != nil {
				t.Fatal(err)
			}
			sent := srv.Sent()
			var got []int
			for _, s := range sent {
				got = append(got, s.ReplyTo)
			}
			if len(got) != len(want) {
				t.Fatalf("%d messages, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("reply_to_message_id per chunk %v, want %v", got, want)
				}
			}
		})
	}
}
