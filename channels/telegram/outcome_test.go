package telegram

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
)

// An error answer below 500 is Telegram saying nothing was posted; a
// server error, the adapter's own 502 for an unreadable answer and a
// transport error leave the outcome unknown.
func TestAPIErrorAnswered(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&APIError{Method: "sendMessage", Code: 400, Description: "Bad Request: chat not found"}, true},
		{&APIError{Method: "sendMessage", Code: 429, RetryAfter: time.Second}, true},
		{&APIError{Method: "sendMessage", Code: 502, Description: "undecodable result"}, false},
		{wrapErr("sendMessage", &url.Error{Op: "Post", URL: "x", Err: errors.New("connection reset")}), false},
	} {
		if got := channels.Answered(c.err); got != c.want {
			t.Errorf("Answered(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
