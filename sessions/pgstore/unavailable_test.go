package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, true},
		{"terminated by an administrator", fmt.Errorf("x: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"read-only standby", &pgconn.PgError{Code: "25006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"invalid text", &pgconn.PgError{Code: "22021"}, false},
		{"connection lost", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"call timed out", fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{"cancelled", fmt.Errorf("get: %w", context.Canceled), false},
		{"not found", sessions.ErrNotFound, false},
		{"bad input", errors.New("session key: not a key"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unavailable(tc.err); got != tc.want {
				t.Errorf("unavailable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestStoreWrapsOutageInErrStorage: while the server refuses connections
// (a restart), the index and transcript calls of a Store fail with an
// error wrapping sessions.ErrStorage, which tells dispatch to wait for the
// storage instead of counting a failed turn; a statement timing out behind
// a lock does too. An unknown key stays ErrNotFound, a cancelled call
// stays a cancellation.
func TestStoreWrapsOutageInErrStorage(t *testing.T) {
	raw := pgtest.NewDatabase(t)
	db, err := Open(context.Background(), Options{URL: raw, MaxConns: 4, StatementTimeout: 500 * time.Millisecond,
		Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	st := db.Store("main", nil)
	key := mustKey(t, "main", "telegram", "-100")
	e, _, err := st.Begin(ctx, key, sessions.Origin{At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, sessions.UserText("hello", time.Now())); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Patch(ctx, mustKey(t, "main", "telegram", "-200"), func(*sessions.Entry) error { return nil }); !errors.Is(err, sessions.ErrNotFound) || errors.Is(err, sessions.ErrStorage) {
		t.Errorf("Patch of an unknown key = %v, want ErrNotFound and not ErrStorage", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := st.Begin(cancelled, key, sessions.Origin{At: time.Now()}); err == nil || errors.Is(err, sessions.ErrStorage) {
		t.Errorf("Begin with a cancelled context = %v, want a cancellation, not ErrStorage", err)
	}

	// A statement behind a row lock times out.
	admin, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM entries WHERE session_id = $1 FOR UPDATE`, e.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Begin(ctx, key, sessions.Origin{At: time.Now()}); !errors.Is(err, sessions.ErrStorage) || !strings.Contains(err.Error(), "57014") {
		t.Errorf("Begin behind a lock = %v, want a statement timeout wrapping ErrStorage", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The server refuses connections: what the pool holds is terminated.
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	su, err := pgx.Connect(ctx, pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := su.Exec(ctx, "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	if _, err := su.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Begin": func() error { _, _, err := st.Begin(ctx, key, sessions.Origin{At: time.Now()}); return err },
		"Get":   func() error { _, _, err := st.Get(key); return err },
		"Append": func() error {
			_, err := tr.Append(ctx, sessions.UserText("again", time.Now()))
			return err
		},
		"Records": func() error { _, err := tr.Records(ctx, []string{"r1"}); return err },
		"Context": func() error { _, err := tr.Context(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, sessions.ErrStorage) {
			t.Errorf("%s while the server refuses connections = %v, want an error wrapping ErrStorage", name, err)
		}
	}
	if _, err := su.Exec(ctx, "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS true"); err != nil {
		t.Fatal(err)
	}
	// Back: the same Store works again.
	if _, _, err := st.Begin(ctx, key, sessions.Origin{At: time.Now()}); err != nil {
		t.Errorf("Begin after the outage: %v", err)
	}
}
