package telegram

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// APIError is an error answer of the Bot API ({"ok":false,...}).
type APIError struct {
	Method      string
	Code        int    // error_code: 400, 401, 403, 409, 429...
	Description string // Telegram's description; never contains the token
	// RetryAfter is parameters.retry_after (flood control), zero if absent.
	RetryAfter time.Duration
	// MigrateToChatID is parameters.migrate_to_chat_id, zero if absent.
	MigrateToChatID int64
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("telegram: %s: %d %s", e.Method, e.Code, e.Description)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// Answered implements channels.Answered: an error answer below 500 says
// the request was refused, so nothing was posted; a server error (and the
// adapter's own 502 for an answer it could not read) leaves it unknown.
func (e *APIError) Answered() bool { return e.Code > 0 && e.Code < 500 }

// AccountRefused implements channels.AccountRefused: Telegram answers a
// token it does not know (revoked, rotated) with 401 or 404 to any method.
func (e *APIError) AccountRefused() bool {
	return e.Code == http.StatusUnauthorized || e.Code == http.StatusNotFound
}

// Conflict reports a 409: another getUpdates consumer or an active webhook.
func (e *APIError) Conflict() bool { return e.Code == 409 }

// EntitiesRejected reports a 400 "can't parse entities" answer.
func (e *APIError) EntitiesRejected() bool {
	return e.Code == 400 && strings.Contains(strings.ToLower(e.Description), "can't parse entities")
}

// TextEmpty reports a 400 "message text is empty" answer: Telegram counts
// the text its entity parsing leaves, and markup around nothing (an empty
// code block, a quote of nothing) leaves none.
func (e *APIError) TextEmpty() bool {
	return e.Code == 400 && strings.Contains(strings.ToLower(e.Description), "text is empty")
}

// plainWouldPass reports an answer to formatted text that the same text
// sent plain may not get: entities rejected, or no visible text left.
func (e *APIError) plainWouldPass() bool { return e.EntitiesRejected() || e.TextEmpty() }

// wrapErr converts the library's error into *APIError and names the method.
// Transport errors are wrapped as they are.
func wrapErr(method string, err error) error {
	if err == nil {
		return nil
	}
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		return &APIError{Method: method, Code: te.Code, Description: te.Message,
			RetryAfter: time.Duration(te.RetryAfter) * time.Second, MigrateToChatID: te.MigrateToChatID}
	}
	// A transport error's URL holds the token: keep only the method.
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = method
	}
	return fmt.Errorf("telegram: %s: %w", method, err)
}
