package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// fakeLetters is an api.DeadLetters over a map: a letter resubmits or
// discards once.
type fakeLetters map[string]string // id -> state

func (f fakeLetters) DeadLetters(context.Context) ([]sessions.DeadLetter, error) {
	var out []sessions.DeadLetter
	for id, st := range f {
		out = append(out, sessions.DeadLetter{ID: id, Kind: sessions.DeadMessage, State: st})
	}
	return out, nil
}

func (f fakeLetters) take(id string) error {
	switch f[id] {
	case "closing":
		return fmt.Errorf("dispatch: resubmit: shutting down: %w", lanes.ErrClosed)
	case "":
		return fmt.Errorf("%w: %q", sessions.ErrNoDeadLetter, id)
	case sessions.DeadResubmitting:
		return fmt.Errorf("%w: %q", sessions.ErrDeadLetterClaimed, id)
	}
	delete(f, id)
	return nil
}

func (f fakeLetters) Resubmit(_ context.Context, id string) (sessions.DeadLetter, error) {
	return sessions.DeadLetter{ID: id}, f.take(id)
}

func (f fakeLetters) Discard(_ context.Context, id string) error { return f.take(id) }

// TestDeliveryRoutes: the dead letter routes want the token, list, and
// answer 200 once, then 404; a letter another resubmit holds is 409; a
// resubmit refused by a shutdown is 503.
func TestDeliveryRoutes(t *testing.T) {
	letters := fakeLetters{"a": sessions.DeadFailed, "b": sessions.DeadFailed, "c": sessions.DeadResubmitting, "d": "closing"}
	srv := httptest.NewServer(api.New(api.Options{Token: "tok", DeadLetters: letters}))
	defer srv.Close()
	call := func(method, path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Host = "127.0.0.1"
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if method == http.MethodGet && res.StatusCode == http.StatusOK {
			var body struct{ Letters []sessions.DeadLetter }
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil || len(body.Letters) != len(letters) {
				t.Errorf("list: %+v, %v", body, err)
			}
		}
		return res.StatusCode
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/api/deliveries/failed", "", http.StatusUnauthorized},
		{"POST", "/api/deliveries/failed/a/resubmit", "", http.StatusUnauthorized},
		{"GET", "/api/deliveries/failed", "tok", http.StatusOK},
		{"POST", "/api/deliveries/failed/a/resubmit", "tok", http.StatusOK},
		{"POST", "/api/deliveries/failed/a/resubmit", "tok", http.StatusNotFound},
		{"POST", "/api/deliveries/failed/c/resubmit", "tok", http.StatusConflict},
		{"DELETE", "/api/deliveries/failed/c", "tok", http.StatusConflict},
		{"DELETE", "/api/deliveries/failed/b", "tok", http.StatusOK},
		{"DELETE", "/api/deliveries/failed/b", "tok", http.StatusNotFound},
		// Refused while the daemon shuts down: try again later (it
		// answered 500).
		{"POST", "/api/deliveries/failed/d/resubmit", "tok", http.StatusServiceUnavailable},
		// An id no letter can have is the caller's mistake on every
		// backend (PostgreSQL answered 500 with its driver error).
		{"DELETE", "/api/deliveries/failed/a%00b", "tok", http.StatusBadRequest},
		{"POST", "/api/deliveries/failed/a%FFb/resubmit", "tok", http.StatusBadRequest},
	} {
		if got := call(c.method, c.path, c.token); got != c.want {
			t.Errorf("%s %s (token %q): %d, want %d", c.method, c.path, c.token, got, c.want)
		}
	}
}
