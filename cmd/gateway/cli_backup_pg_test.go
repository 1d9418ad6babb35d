package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// pgTool runs a PostgreSQL client tool (pg_dump, pg_restore) as
// deploy/OPERATIONS.md documents it.
func pgTool(t *testing.T, name string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed for the documented PostgreSQL backup (Debian: apt-get install postgresql-client-15): %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// TestBackupPostgresDumpRestore follows the documented PostgreSQL backup
// (deploy/OPERATIONS.md, "Backup and restore"): a database holding the
// state of buildFilesState is dumped with pg_dump --format=custom and
// restored with pg_restore --clean --if-exists into another database,
// which the gateway opens (its schema check passes) and whose state,
// moved back into a state dir, equals the original in everything
// `storage migrate` verifies. `gateway backup` refuses the postgres
// config and names pg_dump.
func TestBackupPostgresDumpRestore(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "state")
	buildFilesState(t, src)
	cfg := writeConfig(t, src, "", "")
	from := pgtest.NewDatabase(t)
	gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", from).want(t, 0)

	dump := filepath.Join(root, "gateway.dump")
	pgTool(t, "pg_dump", "--format=custom", "--dbname", from, "--file", dump)
	to := pgtest.NewDatabase(t)
	pgTool(t, "pg_restore", "--clean", "--if-exists", "--dbname", to, dump)

	back := filepath.Join(root, "back")
	gw(t, cfg, "storage", "migrate", "--from", "postgres", "--to", "files", "--postgres-url", to, "--state-dir", back).want(t, 0)
	compareStateDirs(t, src, back)

	pgCfg := writeConfig(t, filepath.Join(root, "pgstate"), "", "storage: {backend: postgres, postgres: {url: \""+to+"\"}}\n")
	r := gw(t, pgCfg, "backup", "create", filepath.Join(root, "x.tar.gz")).want(t, 1)
	if !strings.Contains(r.Stderr, "pg_dump") {
		t.Fatalf("backup create on a postgres config: %s", r.Stderr)
	}
}
