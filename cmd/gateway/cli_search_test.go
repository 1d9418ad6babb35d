package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

func TestSessionsSearch(t *testing.T) {
	state := t.TempDir()
	at := time.Now().Add(-2 * time.Hour)
	keys := seed(t, state, at, []string{"where is the invoice", "thanks"}, []string{"invoice paid yesterday"})
	cfg := writeConfig(t, state, "", "agents: {list: [{id: main}, {id: other}]}\n")

	r := gw(t, cfg, "sessions", "search", "invoice", "--json").want(t, 0)
	var hits []sessions.SearchHit
	if err := json.Unmarshal([]byte(r.Stdout), &hits); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	// seed appends each user message and its echo at the same time: four hits.
	if len(hits) != 4 {
		t.Fatalf("hits: %+v", hits)
	}
	for _, h := range hits {
		if h.Agent != "main" || !strings.Contains(strings.ToLower(h.Snippet), "invoice") || len(h.EntryID) != 8 ||
			!h.At.Equal(at.Truncate(time.Millisecond)) {
			t.Errorf("hit %+v", h)
		}
	}
	r = gw(t, cfg, "sessions", "search", "INVOICE", "paid", "--room", keys[1].String()).want(t, 0)
	if !strings.Contains(r.Stdout, "TIME") || !strings.Contains(r.Stdout, keys[1].String()) ||
		strings.Contains(r.Stdout, keys[0].String()) || !strings.Contains(r.Stdout, "invoice paid yesterday") {
		t.Errorf("table with --room:\n%s", r.Stdout)
	}
	r = gw(t, cfg, "sessions", "search", "invoice", "--limit", "1", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.Stdout), &hits); err != nil || len(hits) != 1 {
		t.Errorf("--limit 1: %v %s", err, r.Stdout)
	}
	r = gw(t, cfg, "sessions", "search", "invoice", "--since", "1h").want(t, 0)
	if strings.TrimSpace(r.Stdout) != "no messages match" {
		t.Errorf("--since 1h: %q", r.Stdout)
	}
	r = gw(t, cfg, "sessions", "search", "invoice", "--agent", "other", "--json").want(t, 0)
	if strings.TrimSpace(r.Stdout) != "[]" {
		t.Errorf("--agent other: %q", r.Stdout)
	}
	for _, args := range [][]string{
		{"sessions", "search"},
		{"sessions", "search", "?!"},
		{"sessions", "search", "invoice", "--since", "last tuesday"},
		{"sessions", "search", "invoice", "--limit", "1000"},
		{"sessions", "search", "invoice", "--room", "a:b/c"},
	} {
		r := gw(t, cfg, args...).want(t, 2)
		if r.Stderr == "" {
			t.Errorf("%v: no message on stderr", args)
		}
	}
	// Reset and delete take the sessions out of the results.
	gw(t, cfg, "sessions", "reset", keys[0].String()).want(t, 0)
	gw(t, cfg, "sessions", "delete", keys[1].String()).want(t, 0)
	r = gw(t, cfg, "sessions", "search", "invoice").want(t, 0)
	if strings.TrimSpace(r.Stdout) != "no messages match" {
		t.Errorf("after reset and delete:\n%s", r.Stdout)
	}
}

// TestSessionsSearchSinceLocalDay: --since DATE starts at that day's local
// midnight, the day the TIME column prints: in Tokyo a message of
// 2026-11-30 18:09 UTC is listed at 2026-12-01 03:09 and --since
// 2026-12-01 finds it; in Los Angeles it is listed on 2026-11-30 and
// --since 2026-12-01 does not.
func TestSessionsSearchSinceLocalDay(t *testing.T) {
	state := t.TempDir()
	seed(t, state, time.Date(2026, 11, 30, 18, 9, 0, 0, time.UTC), []string{"where is the invoice"})
	cfg := writeConfig(t, state, "", "")
	for _, c := range []struct {
		tz, day string
		found   bool
	}{
		{"Asia/Tokyo", "2026-12-01 03:09", true},
		{"America/Los_Angeles", "2026-11-30 10:09", false},
	} {
		t.Setenv("TZ", c.tz)
		if out := gw(t, cfg, "sessions", "search", "invoice").want(t, 0).Stdout; !strings.Contains(out, c.day) {
			t.Fatalf("TZ=%s: the table does not print %s:\n%s", c.tz, c.day, out)
		}
		out := gw(t, cfg, "sessions", "search", "invoice", "--since", "2026-12-01").want(t, 0).Stdout
		if got := strings.Contains(out, c.day); got != c.found {
			t.Errorf("TZ=%s: --since 2026-12-01 lists the message of %s: %v, want %v\n%s", c.tz, c.day, got, c.found, out)
		}
	}
}
