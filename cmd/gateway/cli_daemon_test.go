package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIResetWhileDaemonRuns: `gateway sessions reset` run beside a live
// daemon — through its API, and with --no-daemon straight into the store —
// leaves the daemon on the new session: the next turn lands in the new
// transcript, the old one is archived untouched, the counters are not
// doubled and doctor finds nothing to fix.
func TestCLIResetWhileDaemonRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		how   string
	}{
		{"via the daemon", nil, "via the daemon"},
		{"straight into the store", []string{"--no-daemon"}, "in the store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			must(t, os.Chmod(state, 0o700))
			addr := startFromFile(t, writeYAML(t, reloadYAML(state, "")))
			cfg := writeConfig(t, state, addr, "")

			_, sid := chat(t, addr, "", "first message")
			chat(t, addr, sid, "second message")

			list := gw(t, cfg, "sessions", "list").want(t, 0)
			if !strings.Contains(list.Stdout, sid) {
				t.Fatalf("list does not show %s:\n%s", sid, list.Stdout)
			}
			args := append([]string{"sessions", "reset", sid}, tc.flags...)
			r := gw(t, cfg, args...).want(t, 0)
			m := regexp.MustCompile(`new session ([0-9a-f-]{36})`).FindStringSubmatch(r.Stdout)
			if m == nil || !strings.Contains(r.Stdout, tc.how) {
				t.Fatalf("reset output %q: want a new session id and %q", r.Stdout, tc.how)
			}
			newID := m[1]

			reply, got := chat(t, addr, newID, "after the reset")
			if got != newID || !strings.Contains(reply, "after the reset") {
				t.Fatalf("turn after the reset answered %q in session %s, want session %s", reply, got, newID)
			}
			dir := filepath.Join(state, "agents", "main", "sessions")
			fresh, err := os.ReadFile(filepath.Join(dir, newID+".jsonl"))
			if err != nil {
				t.Fatalf("the new session's transcript: %v", err)
			}
			if !strings.Contains(string(fresh), "after the reset") || strings.Contains(string(fresh), "first message") {
				t.Fatalf("new transcript holds the wrong turns:\n%s", fresh)
			}
			old, _ := filepath.Glob(filepath.Join(dir, sid+".jsonl*"))
			for _, p := range old {
				b, err := os.ReadFile(p)
				must(t, err)
				if strings.Contains(string(b), "after the reset") {
					t.Fatalf("the turn after the reset landed in the old transcript %s", p)
				}
			}
			// Counters reach the files within the flush interval (1 s).
			count := regexp.MustCompile(`"messageCount":\s*(\d+)`)
			deadline := time.Now().Add(10 * time.Second)
			for {
				shown := gw(t, cfg, "sessions", "show", newID, "--json").want(t, 0)
				m := count.FindStringSubmatch(shown.Stdout)
				if m != nil && m[1] == "2" {
					break
				}
				if (m != nil && m[1] != "1") || time.Now().After(deadline) {
					t.Fatalf("the new session should count 2 messages:\n%s", shown.Stdout)
				}
				time.Sleep(100 * time.Millisecond)
			}
			gw(t, cfg, "doctor").want(t, 0)
		})
	}
}

// writeYAML writes a config file and returns its path.
func writeYAML(t *testing.T, y string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gateway.yaml")
	must(t, os.WriteFile(p, []byte(y), 0o600))
	return p
}
