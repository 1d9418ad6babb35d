package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestMemoryCLI: `gateway memory edit|list|show|forget` on both backends,
// within the agent's configured limits, with exit 2 and a message for a
// bad scope or note number.
func TestMemoryCLI(t *testing.T) {
	for _, backend := range []string{"files", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			extra := "agents: {list: [{id: main, memory: {enabled: true, maxNotes: 2, maxNoteBytes: 30}}]}\n"
			if backend == "postgres" {
				extra += pgStorage(pgtest.NewDatabase(t))
			}
			cfg := writeConfig(t, t.TempDir(), "", extra)
			scope := "main/sender/telegram:42"
			if r := gw(t, cfg, "memory", "edit", scope, "new", "prefers tea").want(t, 0); !strings.Contains(r.Stdout, "note 1: prefers tea") {
				t.Errorf("edit new: %q", r.Stdout)
			}
			gw(t, cfg, "memory", "edit", scope, "new", "lives in Lyon").want(t, 0)
			gw(t, cfg, "memory", "edit", "main/agent", "new", "ships on Fridays").want(t, 0)
			if r := gw(t, cfg, "memory", "edit", scope, "new", "a third"); r.Code != 1 || !strings.Contains(r.Stderr, "limit of 2 notes") {
				t.Errorf("edit past maxNotes: exit %d, %q", r.Code, r.Stderr)
			}
			if r := gw(t, cfg, "memory", "edit", scope, "2", strings.Repeat("x", 31)); r.Code != 1 || !strings.Contains(r.Stderr, "at most 30 bytes") {
				t.Errorf("edit past maxNoteBytes: exit %d, %q", r.Code, r.Stderr)
			}
			gw(t, cfg, "memory", "edit", scope, "2", "lives in Grenoble").want(t, 0)
			r := gw(t, cfg, "memory", "list").want(t, 0)
			if lines := strings.Split(strings.TrimSpace(r.Stdout), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], "main/agent ") ||
				!strings.HasPrefix(lines[2], scope+" ") {
				t.Errorf("list:\n%s", r.Stdout)
			}
			var notes []sessions.MemoryNote
			r = gw(t, cfg, "memory", "show", scope, "--json").want(t, 0)
			if err := json.Unmarshal([]byte(r.Stdout), &notes); err != nil || len(notes) != 2 || notes[1].Text != "lives in Grenoble" {
				t.Errorf("show --json: %v %q", err, r.Stdout)
			}
			gw(t, cfg, "memory", "forget", scope, "1").want(t, 0)
			if r := gw(t, cfg, "memory", "forget", scope, "1"); r.Code != 1 || !strings.Contains(r.Stderr, "has no note 1") {
				t.Errorf("forget a forgotten note: exit %d, %q", r.Code, r.Stderr)
			}
			if r := gw(t, cfg, "memory", "forget", scope).want(t, 0); !strings.Contains(r.Stdout, "forgot 1 notes") {
				t.Errorf("forget scope: %q", r.Stdout)
			}
			if r := gw(t, cfg, "memory", "show", scope).want(t, 0); !strings.Contains(r.Stdout, "no notes") {
				t.Errorf("show after forget: %q", r.Stdout)
			}
			for _, args := range [][]string{
				{"memory", "show", "main/people/x"}, {"memory", "show", "../x/agent"}, {"memory", "show", "main/sender"},
				{"memory", "edit", scope, "zero", "x"}, {"memory", "forget", scope, "-1"}, {"memory", "forget"},
				{"memory", "list", "--agent", "a b"},
			} {
				if r := gw(t, cfg, args...); r.Code != 2 || r.Stderr == "" {
					t.Errorf("gateway %v: exit %d, stderr %q; want 2 and a message", args, r.Code, r.Stderr)
				}
			}
		})
	}
}

// TestStorageMigrateMemory: `gateway storage migrate` carries the notes
// files -> postgres -> files; a second run copies nothing.
func TestStorageMigrateMemory(t *testing.T) {
	stateDir := t.TempDir()
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, stateDir, "", "agents: {list: [{id: main}, {id: ops}]}\n")
	scope := "main/sender/telegram:42"
	gw(t, cfg, "memory", "edit", scope, "new", "prefers tea").want(t, 0)
	gw(t, cfg, "memory", "edit", scope, "new", "to forget").want(t, 0)
	gw(t, cfg, "memory", "edit", scope, "new", "lives in Lyon").want(t, 0)
	gw(t, cfg, "memory", "forget", scope, "2").want(t, 0)
	gw(t, cfg, "memory", "edit", "ops/room/discord:9", "new", "standup at 9").want(t, 0)
	r := gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	if !strings.Contains(r.Stdout, "memory notes        3 copied") {
		t.Fatalf("files -> postgres:\n%s", r.Stdout)
	}
	r = gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	if !strings.Contains(r.Stdout, "memory notes        0 copied") {
		t.Fatalf("second run:\n%s", r.Stdout)
	}
	backDir := filepath.Join(t.TempDir(), "back")
	gw(t, cfg, "storage", "migrate", "--from", "postgres", "--to", "files", "--postgres-url", url, "--state-dir", backDir).want(t, 0)
	backCfg := writeConfig(t, backDir, "", "")
	r = gw(t, backCfg, "memory", "show", scope).want(t, 0)
	if lines := strings.Split(strings.TrimSpace(r.Stdout), "\n"); len(lines) != 3 || !strings.Contains(lines[1], "prefers tea") ||
		!strings.HasPrefix(lines[2], "2 ") || !strings.Contains(lines[2], "lives in Lyon") {
		t.Errorf("after the round trip:\n%s", r.Stdout)
	}
	if r := gw(t, backCfg, "memory", "list").want(t, 0); !strings.Contains(r.Stdout, "ops/room/discord:9") {
		t.Errorf("list after the round trip:\n%s", r.Stdout)
	}
}
