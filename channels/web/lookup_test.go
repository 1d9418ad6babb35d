package web

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSessionLookupFailureIsNotNotFound: a chat continuing a session while
// the sessions cannot be read is answered 503 (try again), not 404: the
// page takes a 404 for a session deleted in another tab, follows the chat
// elsewhere and tells the person the session is gone.
func TestSessionLookupFailureIsNotNotFound(t *testing.T) {
	r := newRigWith(t, Options{Lookup: func(agent, session string) (string, bool, error) {
		if session == "s-broken" {
			return "", false, errors.New("sessions.json: input/output error")
		}
		return "", false, nil
	}})
	res := r.postRaw(t, `{"message":"hi","sessionId":"s-broken"}`)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "try again") ||
		strings.Contains(string(b), "input/output") {
		t.Errorf("lookup failing: %s %s, want 503 try again (no internals)", res.Status, b)
	}
	res = r.postRaw(t, `{"message":"hi","sessionId":"s-gone"}`)
	b, _ = io.ReadAll(res.Body)
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "session s-gone not found") {
		t.Errorf("session not there: %s %s, want 404", res.Status, b)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.ins); n != 0 {
		t.Errorf("%d messages handled, want none", n)
	}
}
