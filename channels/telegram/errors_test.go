package telegram_test

import (
	"errors"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
)

func asAPIError(err error, target **telegram.APIError) bool { return errors.As(err, target) }

// TestTokenRefusalIsTheAccounts: a 401 or 404 (Telegram's answers to a
// token it does not know, to any method) is a refusal of the bot's
// credentials, not of the chat; a 403 (blocked, kicked) or a 400 (chat
// not found) is the chat's.
func TestTokenRefusalIsTheAccounts(t *testing.T) {
	for code, acct := range map[int]bool{401: true, 404: true, 403: false, 400: false, 429: false} {
		err := error(&telegram.APIError{Method: "sendMessage", Code: code})
		if !channels.Answered(err) || channels.AccountRefused(err) != acct {
			t.Errorf("%d: answered %v, account refused %v, want true, %v", code, channels.Answered(err),
				channels.AccountRefused(err), acct)
		}
	}
}
