package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestStorageMigrateThreeBackends moves a state dir through every
// backend, files → sqlite → postgres → files, and sqlite → files and
// postgres → sqlite beside it, through the binary: each copy verifies, a
// second run copies nothing, every session's `sessions show --context
// --json` is the same on all of them (clocks at microseconds), and the
// transcripts come back byte-identical.
func TestStorageMigrateThreeBackends(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	built := buildFilesState(t, stateDir)
	url := pgtest.NewDatabase(t)
	// Every agent of the built state, so that `sessions show` serves all.
	agents := "agents: {list: [{id: main}, {id: ops}, {id: x-agent_2}]}\n"
	cfg := writeConfig(t, stateDir, "", agents)
	sqlDir, backDir, sqlBackDir, sqlDir2 := t.TempDir(), filepath.Join(t.TempDir(), "back"), filepath.Join(t.TempDir(), "back2"), t.TempDir()
	keys := len(built.Current) + len(built.Deleted)

	steps := []struct{ from, to string }{
		{"files", "sqlite"}, {"sqlite", "postgres"}, {"postgres", "files"}, {"sqlite", "files"}, {"postgres", "sqlite"},
	}
	for i, s := range steps {
		args := []string{"storage", "migrate", "--from", s.from, "--to", s.to, "--postgres-url", url, "--sqlite-state-dir", sqlDir}
		switch i {
		case 2:
			args = append(args, "--state-dir", backDir)
		case 3:
			args = append(args, "--state-dir", sqlBackDir)
		case 4:
			args[len(args)-1] = sqlDir2
		}
		r := gw(t, cfg, args...).want(t, 0)
		for _, want := range []string{
			"sessions            " + strconv.Itoa(len(built.Current)) + " (session keys " + strconv.Itoa(keys) + ": " + strconv.Itoa(keys) + " copied, 0 already present)",
			"verified: counts equal", "identical for " + strconv.Itoa(len(built.Current)) + " sessions",
			"journal holds the 2 pending records, 1 unsent replies and 1 drafts",
			"pairing of 2 channels and 3 cursors equal",
			"6 room history entries equal",
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("%s -> %s: output lacks %q:\n%s", s.from, s.to, want, r.Stdout)
			}
		}
		t.Logf("%s -> %s:\n%s", s.from, s.to, r.Stdout)
	}
	r := gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "sqlite", "--sqlite-state-dir", sqlDir).want(t, 0)
	if !strings.Contains(r.Stdout, ": 0 copied, "+strconv.Itoa(keys)+" already present") {
		t.Fatalf("second files -> sqlite copied something:\n%s", r.Stdout)
	}
	sameTranscripts(t, stateDir, backDir)
	sameTranscripts(t, stateDir, sqlBackDir)

	cfgs := map[string]string{
		"sqlite":          writeConfig(t, sqlDir, "", agents+"storage: {backend: sqlite}\n"),
		"postgres":        writeConfig(t, t.TempDir(), "", agents+"storage: {backend: postgres, postgres: {url: \""+url+"\"}}\n"),
		"files (back)":    writeConfig(t, backDir, "", agents),
		"sqlite (second)": writeConfig(t, sqlDir2, "", agents+"storage: {backend: sqlite}\n"),
	}
	for _, k := range built.Current {
		want := normalizeClocks(t, gw(t, cfg, "sessions", "show", k.String(), "--context", "--json").want(t, 0).Stdout)
		for name, c := range cfgs {
			got := normalizeClocks(t, gw(t, c, "sessions", "show", k.String(), "--context", "--json").want(t, 0).Stdout)
			if got != want {
				t.Errorf("%s: show on %s differs from files:\n%s\n---\n%s", k, name, got, want)
			}
		}
	}
}

// TestStorageMigrateRefusesDaemonOnSQLite: while a daemon holds the
// sqlite side's state dir, a migration to or from it refuses naming the
// daemon, and creates no database.
func TestStorageMigrateRefusesDaemonOnSQLite(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	buildFilesState(t, stateDir)
	sqlDir := t.TempDir()
	cfg := writeConfig(t, stateDir, "", "")
	release, err := gatewayd.LockStateDir(sqlDir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, dir := range [][]string{{"files", "sqlite"}, {"sqlite", "files"}} {
		r := gw(t, cfg, "storage", "migrate", "--from", dir[0], "--to", dir[1], "--sqlite-state-dir", sqlDir).want(t, 1)
		if !strings.Contains(r.Stderr, "another gateway (pid "+strconv.Itoa(os.Getpid())+")") {
			t.Fatalf("%s -> %s beside a daemon:\n%s", dir[0], dir[1], r.Stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(sqlDir, "gateway.sqlite")); !os.IsNotExist(err) {
		t.Fatalf("the refused migration created the database: %v", err)
	}
}
