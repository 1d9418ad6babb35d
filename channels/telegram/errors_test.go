package telegram_test

import (
	"errors"

	"github.com/gateway/gateway/channels/telegram"
)

func asAPIError(err error, target **telegram.APIError) bool { return errors.As(err, target) }
