package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
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
	files := migrationSources(t)
	if want := files[len(files)-1].Version; v != want {
		t.Fatalf("schema version %d, want %d", v, want)
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
	if applied != len(files) {
		t.Errorf("%d migration rows, want %d", applied, len(files))
	}
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
	if n, want := logs.FilterMessage("schema migration applied").Len(), len(migrationSources(t)); n != want {
		t.Errorf("%d migrations applied by 4 concurrent Opens, want each of the %d once", n, want)
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

// Options.StatementTimeout reaches the server: a statement running longer
// is cancelled by PostgreSQL itself (SQLSTATE 57014), and a URL's own
// statement_timeout wins over it.
func TestStatementTimeoutOption(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	// Migrate first: under load the schema's statements may take longer
	// than the short timeout this test sets.
	pre, err := Open(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	pre.Close()
	db, err := Open(ctx, Options{URL: url, StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var shown string
	if err := db.pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&shown); err != nil {
		t.Fatal(err)
	}
	if shown != "200ms" {
		t.Errorf("statement_timeout %q, want 200ms", shown)
	}
	_, err = db.pool.Exec(ctx, `SELECT pg_sleep(5)`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("pg_sleep(5) under a 200ms statement timeout: %v, want SQLSTATE 57014", err)
	}

	db2, err := Open(ctx, Options{URL: pgtest.WithParam(t, url, "statement_timeout", "1500"), StatementTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if err := db2.pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&shown); err != nil {
		t.Fatal(err)
	}
	if shown != "1500ms" {
		t.Errorf("statement_timeout with the URL's own: %q, want 1500ms", shown)
	}
}
