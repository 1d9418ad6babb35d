package main

import (
	"strings"
	"testing"
)

// TestSessionArgMalformedOrHuge: a KEY argument that starts like a key but
// is not one (a control character, an empty part) is a usage error (exit
// 2) saying why, with the argument quoted; a huge argument is clipped in
// the message, never echoed whole (a 100 KB id came back 100 KB long).
func TestSessionArgMalformedOrHuge(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", "")
	for _, arg := range []string{"agent:main:a\x01b", "agent:main:"} {
		for _, sub := range []string{"show", "reset", "delete"} {
			r := gw(t, cfg, "sessions", sub, arg)
			if r.Code != 2 || !strings.Contains(r.Stderr, "invalid session key") || strings.ContainsRune(r.Stderr, '\x01') ||
				strings.Count(r.Stderr, "agent:main:") != 1 {
				t.Errorf("sessions %s %q: exit %d, stderr %q; want 2 naming the invalid key, quoted", sub, arg, r.Code, r.Stderr)
			}
		}
	}
	huge := strings.Repeat("x", 100_000)
	r := gw(t, cfg, "sessions", "show", huge).want(t, 1)
	if len(r.Stderr) > 400 {
		t.Errorf("sessions show <100 KB>: stderr is %d bytes, want the id clipped", len(r.Stderr))
	}
}
