package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestPairingRevokeThroughTheDaemon: with a daemon answering on
// http.listen, `gateway pairing revoke` revokes through its API (which
// drops what it holds queued from the sender, as the console's revoke
// does) instead of in the pairing state behind its back; the daemon's
// 404 is "was not approved".
func TestPairingRevokeThroughTheDaemon(t *testing.T) {
	var mu sync.Mutex
	var got []string
	daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/healthz":
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodPost && r.URL.Path == "/api/pairing/telegram/revoke":
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, string(body))
			mu.Unlock()
			if strings.Contains(string(body), `"senderId":"9999"`) {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"error":"telegram sender 9999 on account default was not approved"}`)
				return
			}
			_, _ = io.WriteString(w, `{"revoked":true}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer daemon.Close()
	cfg := writeConfig(t, t.TempDir(), strings.TrimPrefix(daemon.URL, "http://"), "")
	r := gw(t, cfg, "pairing", "revoke", "Telegram", "default", "4242").want(t, 0)
	if !strings.Contains(r.Stdout, "revoked telegram sender 4242") {
		t.Errorf("revoke: %s", r.Stdout)
	}
	r = gw(t, cfg, "pairing", "revoke", "telegram", "default", "9999").want(t, 1)
	if !strings.Contains(r.Stderr, "was not approved") {
		t.Errorf("revoke of a sender never approved: %s", r.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || !strings.Contains(got[0], `"accountId":"default"`) || !strings.Contains(got[0], `"senderId":"4242"`) {
		t.Errorf("the daemon was asked %q, want both revokes through its API", got)
	}
}
