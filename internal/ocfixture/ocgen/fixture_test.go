package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

const fixtureDir = "../testdata/openclaw-2026.9.6"

// The committed fixture is whole: both databases, OpenClaw's session list,
// and the last messages of every session it lists; and it stays small.
func TestCommittedFixture(t *testing.T) {
	var list struct {
		Sessions []struct {
			Key string `json:"key"`
		} `json:"sessions"`
	}
	b, err := os.ReadFile(filepath.Join(fixtureDir, "expected", "sessions.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("expected/sessions.json: %v", err)
	}
	if len(list.Sessions) == 0 {
		t.Fatal("expected/sessions.json lists no sessions")
	}
	for _, s := range list.Sessions {
		if _, err := os.Stat(filepath.Join(fixtureDir, "expected", "last-messages", HistoryFile(s.Key))); err != nil {
			t.Errorf("session %s: no last-messages file: %v", s.Key, err)
		}
	}
	var total int64
	for _, db := range []string{"state/state/openclaw.sqlite", "state/agents/main/agent/openclaw-agent.sqlite"} {
		fi, err := os.Stat(filepath.Join(fixtureDir, db))
		if err != nil {
			t.Errorf("database missing: %v", err)
			continue
		}
		total += fi.Size()
	}
	if total > 4<<20 {
		t.Errorf("the databases take %d bytes (about 2.9 MB expected: one 4 KB page per table and index); keep the fixture small", total)
	}
}
