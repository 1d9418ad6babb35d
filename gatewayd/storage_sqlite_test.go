package gatewayd

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestOpenBackendSQLite: storage.backend sqlite opens (creating) the
// database file in the state dir; what the daemon wrote, a passive (CLI)
// open reads, beside the daemon; a passive open of a state dir without
// the file is an error naming it and creates nothing.
func TestOpenBackendSQLite(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, "storage: {backend: sqlite}\n")
	if _, err := OpenBackend(ctx, cfg, BackendOptions{Passive: true}); err == nil || !strings.Contains(err.Error(), "gateway.sqlite") {
		t.Fatalf("passive open without a database = %v, want an error naming the file", err)
	}
	if _, err := os.Stat(cfg.StateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir after a passive open: %v, want it absent", err)
	}
	b, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != configs.StorageSQLite {
		t.Errorf("Kind = %q, want sqlite", b.Kind())
	}
	path := filepath.Join(cfg.StateDir, "gateway.sqlite")
	st := b.Status(ctx)
	if st.Kind != "sqlite" || st.Location != path || st.SchemaVersion < 1 || st.Err != "" {
		t.Errorf("Status = %+v, want sqlite at %s with a schema version, no error", st, path)
	}
	key := routing.Key{Agent: "main", Channel: "web", Kind: routing.Direct, Peer: "p1"}
	store, err := b.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := store.Begin(ctx, key, sessions.Origin{Channel: "web", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenBackend(ctx, cfg, BackendOptions{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := p.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := ps.Get(key)
	if err != nil || !ok || got.SessionID != e.SessionID {
		t.Errorf("passive Get beside the daemon = %v %v %v, want session %s", got.SessionID, ok, err, e.SessionID)
	}
	for _, x := range []sessions.Backend{p, b} {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// session.lockTimeout bounds how long a write waits for another process
// holding the SQLite database's lock (a CLI command writing beside the
// daemon), as it bounds the files backend's lock: an operator who set
// 50ms gets a refused write (sessions.ErrStorage, parked and retried)
// after about that, not after SQLite's default of 10 s.
func TestSQLiteWaitsLockTimeoutForAnotherWriter(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, "storage: {backend: sqlite}\nsession: {lockTimeout: 50ms}\n")
	b, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	other, err := sql.Open("sqlite", "file:"+filepath.Join(cfg.StateDir, "gateway.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `ROLLBACK`) //nolint:errcheck // the test's end
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = b.Journal().Accept(wctx, sessions.Record{ID: "held", Payload: json.RawMessage(`{}`)})
	if !errors.Is(err, sessions.ErrStorage) || wctx.Err() != nil {
		t.Fatalf("Accept while another process holds the lock: %v (context: %v), want sessions.ErrStorage well before 3 s", err, wctx.Err())
	}
}
