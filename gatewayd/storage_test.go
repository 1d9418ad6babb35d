package gatewayd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestOpenBackendFiles: the files backend is opened under stateDir, what
// the daemon writes a passive open (the CLI) reads, and Status names it.
func TestOpenBackendFiles(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, "")
	b, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != configs.StorageFiles {
		t.Errorf("Kind = %q, want files", b.Kind())
	}
	if m := filestore.ManagerOf(b); m == nil || m.StateDir() != cfg.StateDir {
		t.Errorf("ManagerOf = %v, want a manager on %s", m, cfg.StateDir)
	}
	st := b.Status(ctx)
	if st.Kind != "files" || st.Location != cfg.StateDir || st.Err != "" {
		t.Errorf("Status = %+v, want files at %s, no error", st, cfg.StateDir)
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
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	p, err := OpenBackend(ctx, cfg, BackendOptions{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ps, err := p.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := ps.Get(key)
	if err != nil || !ok || got.SessionID != e.SessionID {
		t.Errorf("passive Get = %v %v %v, want session %s", got.SessionID, ok, err, e.SessionID)
	}
}

// TestOpenBackendPassiveCreatesNothing: the CLI on a state dir that does
// not exist gets an error naming it, and the directory is not created.
func TestOpenBackendPassiveCreatesNothing(t *testing.T) {
	cfg := testConfig(t, "")
	_, err := OpenBackend(context.Background(), cfg, BackendOptions{Passive: true})
	if err == nil || !strings.Contains(err.Error(), "state directory "+cfg.StateDir) {
		t.Fatalf("passive open of a missing state dir = %v, want an error naming it", err)
	}
	if _, err := os.Stat(cfg.StateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir after a passive open: %v, want it absent", err)
	}
}

// TestOpenBackendPostgresFails: a postgres backend that cannot be opened
// is an error that says so and never repeats the password.
func TestOpenBackendPostgresFails(t *testing.T) {
	cfg := testConfig(t, `storage: {backend: postgres, postgres: {url: "postgres://gw:s3cret@127.0.0.1:1/gw?connect_timeout=2"}}`+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t)})
	if err == nil {
		_ = b.Close()
		t.Fatal("opened a postgres backend on a closed port")
	}
	if !strings.Contains(strings.ToLower(err.Error()), "postgres") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q: want one naming postgres, without the password", err)
	}
}

// countingBackend is a backend whose Close is counted.
type countingBackend struct {
	sessions.Backend
	closed atomic.Int32
}

func (c *countingBackend) Close() error {
	c.closed.Add(1)
	return c.Backend.Close()
}

// TestDaemonOpensInjectedBackend: Options.OpenBackend replaces the
// configured backend; the daemon serves on it and closes it once.
func TestDaemonOpensInjectedBackend(t *testing.T) {
	other := filepath.Join(t.TempDir(), "elsewhere")
	var injected *countingBackend
	open := func(ctx context.Context, cfg *configs.Config) (sessions.Backend, error) {
		c := *cfg
		c.StateDir = other
		b, err := OpenBackend(ctx, &c, BackendOptions{Logger: zaptest.NewLogger(t)})
		if err != nil {
			return nil, err
		}
		injected = &countingBackend{Backend: b}
		return injected, nil
	}
	cfg := testConfig(t, "http: {listen: \"127.0.0.1:0\"}\n")
	ready := make(chan string, 1)
	d, err := New(cfg, Options{Logger: zaptest.NewLogger(t), OpenBackend: open, OnReady: func(a string) { ready <- a }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("not ready")
	}
	_, sid := chat(t, addr, "", "hello")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := injected.closed.Load(); n != 1 {
		t.Errorf("injected backend closed %d times, want 1", n)
	}
	b, err := OpenBackend(context.Background(), &configs.Config{StateDir: other, Session: cfg.Session}, BackendOptions{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := b.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.GetByID(sid); err != nil || !ok {
		t.Errorf("session %s not in the injected backend: %v %v", sid, ok, err)
	}
}

// TestDaemonReportsBackendOpenFailure: a backend that cannot be opened
// stops Run with the reason, and the state dir is released.
func TestDaemonReportsBackendOpenFailure(t *testing.T) {
	errDown := errors.New("database down")
	cfg := testConfig(t, "")
	d, err := New(cfg, Options{Logger: zaptest.NewLogger(t),
		OpenBackend: func(context.Context, *configs.Config) (sessions.Backend, error) { return nil, errDown }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background()); !errors.Is(err, errDown) {
		t.Fatalf("Run = %v, want the open error", err)
	}
	release, err := lockStateDir(cfg.StateDir)
	if err != nil {
		t.Fatalf("state dir still locked: %v", err)
	}
	release()
}

// TestStorageNeedsRestart: a changed storage section is named by hot
// reload as needing a restart (the open backend stays).
func TestStorageNeedsRestart(t *testing.T) {
	base := testConfig(t, "")
	next := *base
	next.Storage.Backend = configs.StoragePostgres
	next.Storage.Postgres.URL = "postgres://db/gw"
	if got := restartOnly(base, &next); !slices.Contains(got, "storage") {
		t.Errorf("restartOnly = %v, want storage", got)
	}
	same := *base
	if got := restartOnly(base, &same); slices.Contains(got, "storage") {
		t.Errorf("restartOnly of an unchanged storage = %v", got)
	}
}

// TestReloadKeepsStorage: a config file whose storage section changed is
// reloaded for everything else, and the log says storage needs a restart;
// the daemon keeps serving on the backend it opened.
func TestReloadKeepsStorage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	write := func(extra string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(reloadYAML(state, extra)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("messages: {queue: {mode: collect}}\n")
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	ready := make(chan string, 1)
	var opened atomic.Int32
	d, err := New(cfg, Options{ConfigPath: path, Logger: zap.New(core), OnReady: func(a string) { ready <- a },
		OpenBackend: func(ctx context.Context, cfg *configs.Config) (sessions.Backend, error) {
			opened.Add(1)
			return OpenBackend(ctx, cfg, BackendOptions{})
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	_, sid := chat(t, addr, "", "hello")

	write("messages: {queue: {mode: followup}}\nstorage: {backend: files, postgres: {maxConns: 20}}\n")
	waitStatus(t, addr, sid, "Queue: followup") // the rest of the file applies
	deadline := time.Now().Add(10 * time.Second)
	for logs.FilterMessage("config key changed but needs a restart to apply").FilterField(zap.String("key", "storage")).Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no restart warning for storage; logs: %v", logs.All())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("backend opened %d times, want once", n)
	}
	if reply, _ := chat(t, addr, sid, "still there?"); !strings.Contains(reply, "still there?") {
		t.Errorf("reply after the reload = %q", reply)
	}
}
