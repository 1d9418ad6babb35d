package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupRefusesSQLiteState: `gateway backup` copies files; a SQLite
// database copied file by file beside a daemon writing it (gateway.sqlite
// and its -wal) is torn. A sqlite config is refused naming sqlite3's
// .backup (it named pg_dump), and so is --state-dir of a state dir that
// holds the database (it wrote the database's files into the archive and
// exited 0), and no archive is left.
func TestBackupRefusesSQLiteState(t *testing.T) {
	state := t.TempDir()
	for _, f := range []string{"gateway.sqlite", "gateway.sqlite-wal"} {
		if err := os.WriteFile(filepath.Join(state, f), []byte("db"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sqliteCfg := writeConfig(t, state, "", "storage: {backend: sqlite}\n")
	filesCfg := writeConfig(t, t.TempDir(), "", "")
	for name, args := range map[string][]string{
		"sqlite config": {"--config", sqliteCfg},
		"--state-dir":   {"--config", filesCfg, "--state-dir", state},
	} {
		out := filepath.Join(t.TempDir(), "b.tgz")
		r := gw(t, "", append([]string{"backup", "create", out}, args...)...)
		if r.Code == 0 || !strings.Contains(r.Stderr, ".backup") || strings.Contains(r.Stderr, "pg_dump") {
			t.Errorf("%s: exit %d, stderr %q; want a refusal naming sqlite3's .backup", name, r.Code, r.Stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: an archive was written", name)
		}
	}
}
