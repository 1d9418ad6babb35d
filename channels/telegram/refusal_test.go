package telegram_test

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestRefusalsAreNotRetried: a chat that refuses the bot (blocked by the
// user, gone, a deleted topic) costs one request: Send returns Telegram's
// refusal at once, as an answered outcome without a retry delay (the
// outbox keeps the reply as a dead letter), naming the reason; a reply to
// a deleted topic is never posted to General instead.
func TestRefusalsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   channels.Address
		fail telegramtest.Failure
	}{
		{"blocked", channels.Address{ChatID: "111"}, telegramtest.Failure{Code: 403}},
		{"chat not found", channels.Address{ChatID: "112"}, telegramtest.Failure{Code: 400, Description: "Bad Request: chat not found"}},
		{"topic deleted", channels.Address{ChatID: id(int(forum)), ThreadID: "77", IsTopic: true},
			telegramtest.Failure{Code: 400, Description: "Bad Request: message thread not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := telegramtest.Start(t, telegramtest.Options{})
			a := newSender(t, srv)
			srv.FailNext("sendMessage", tc.fail, tc.fail, tc.fail)
			err := a.Send(testCtx(t), channels.Outbound{Address: tc.to, Text: "an answer", ReplyToID: "5"})
			if err == nil || !channels.Answered(err) || channels.RetryAfter(err) != 0 {
				t.Fatalf("Send = %v, want an answered refusal without retry delay", err)
			}
			desc := tc.fail.Description
			if desc == "" {
				desc = "bot was blocked by the user"
			}
			if !strings.Contains(err.Error(), desc) {
				t.Errorf("error %q does not say %q", err, desc)
			}
			if n := srv.Calls("sendMessage"); n != 1 {
				t.Errorf("sendMessage called %d times, want 1", n)
			}
			if s := srv.Sent(); len(s) != 0 {
				t.Errorf("sent %+v, want nothing", s)
			}
		})
	}
}
