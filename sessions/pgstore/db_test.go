package pgstore

import (
	"context"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

func TestMigrationsIdempotentAndVersioned(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, latest := embedded(t)
	if v != latest {
		t.Fatalf("schema version %d, want %d", v, latest)
	}
	// A second Open finds nothing to do: it logs no migration.
	core, logs := observer.New(zap.InfoLevel)
	db2, err := Open(ctx, Options{URL: url, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if n := logs.FilterMessage("schema migration applied").Len(); n != 0 {
		t.Errorf("second Open applied %d migrations", n)
	}
	if v2, err := db2.SchemaVersion(ctx); err != nil || v2 != v {
		t.Errorf("version after second Open: %d, %v", v2, err)
	}
	var applied int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+versionTable+` WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != files {
		t.Errorf("%d migration rows, want %d", applied, files)
	}
}

// embedded counts the embedded migrations and returns the latest version.
func embedded(t *testing.T) (n int, latest int64) {
	t.Helper()
	ents, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		v, err := strconv.ParseInt(strings.SplitN(e.Name(), "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", e.Name(), err)
		}
		n, latest = n+1, max(latest, v)
	}
	return n, latest
}

// Replicas starting together: the advisory lock lets exactly one migrate.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	core, logs := observer.New(zap.InfoLevel)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := Open(ctx, Options{URL: url, MaxConns: 2, Logger: zap.New(core)})
			if err != nil {
				errs <- err
				return
			}
			db.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	files, _ := embedded(t)
	if n := logs.FilterMessage("schema migration applied").Len(); n != files {
		t.Errorf("%d migrations applied by 4 concurrent Opens, want each of the %d once", n, files)
	}
}

func TestOpenUnreachableNamesServerNotPassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		name, url string
		want      []string
	}{
		{"socket", "postgres://gw:s3cretpw@/gateway?host=/nonexistent/pgsock", []string{"socket /nonexistent/pgsock", `database "gateway"`, `user "gw"`}},
		{"tcp", "postgres://gw:s3cretpw@127.0.0.1:1/gateway?connect_timeout=2", []string{"host 127.0.0.1:1", `database "gateway"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := Open(ctx, Options{URL: tt.url})
			if err == nil {
				db.Close()
				t.Fatal("Open of an unreachable server succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, "cannot reach PostgreSQL") {
				t.Errorf("error %q does not say it cannot reach the server", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not name %q", msg, w)
				}
			}
			if strings.Contains(msg, "s3cretpw") {
				t.Errorf("error leaks the password: %q", msg)
			}
		})
	}
	if _, err := Open(ctx, Options{URL: "postgres://gw:s3cretpw@host:notaport/db"}); err == nil ||
		strings.Contains(err.Error(), "s3cretpw") {
		t.Errorf("malformed URL: %v", err)
	}
}
