package main

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// pgStorage is the storage block of a daemon on database url.
func pgStorage(url string) string {
	return fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q, maxConns: 8, statementTimeout: 5s}}\n", url)
}

// outage makes database name unreachable for d, as a server restart looks
// to its clients: every connection to it is terminated and new ones are
// refused until the returned function is called.
func outage(t *testing.T, adminURL, name string) (end func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	db := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+db+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		t.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+db+" ALLOW_CONNECTIONS true"); err != nil {
			t.Fatal(err)
		}
	}
}

// pgDatabaseName is the database a pgtest URL names.
func pgDatabaseName(t *testing.T, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		t.Fatalf("no database in %q", url)
	}
	return name
}

// TestEndToEndPostgres: the daemon on the postgres backend answers, keeps
// the conversation across a restart (the context comes back from the
// database), and /new starts a new session with the old one archived.
func TestEndToEndPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml := e2eConfig(stateDir, tg, model) + pgStorage(url)

	_, stop := startDaemon(t, yaml)
	tg.DM(111, "remember the word pelican")
	waitReply(t, tg, "pelican")
	stop()

	_, stop = startDaemon(t, yaml)
	defer stop()
	tg.DM(111, "what was the word?")
	waitReply(t, tg, "what was the word?")
	req, ok := lastRequestFor(model, "what was the word?")
	if !ok {
		t.Fatal("the model never saw the second message")
	}
	if got := strings.Join(convo(req), " | "); !strings.Contains(got, "pelican") {
		t.Errorf("after a restart the model's context lost the first turn: %s", got)
	}
	tg.DM(111, "/new")
	waitFor(t, 20*time.Second, "the /new reply", func() bool {
		for _, s := range sentTo(tg, 111) {
			if strings.Contains(strings.ToLower(s.Text), "new session") {
				return true
			}
		}
		return false
	})
	tg.DM(111, "fresh start")
	waitReply(t, tg, "fresh start")
	req, _ = lastRequestFor(model, "fresh start")
	if got := strings.Join(convo(req), " | "); strings.Contains(got, "pelican") {
		t.Errorf("after /new the context still holds the old session: %s", got)
	}
	// Nothing of the session layer went to the state dir.
	if _, err := os.Stat(filepath.Join(stateDir, "agents", "main", "sessions", "sessions.json")); err == nil {
		t.Error("the postgres backend wrote sessions.json")
	}
}

// TestPostgresOutageMidTraffic: the database goes away under steady
// traffic (every connection terminated, new ones refused, as in a server
// restart) and comes back: the daemon reconnects by itself, every message
// is answered exactly once, and its logs say what happened.
func TestPostgresOutageMidTraffic(t *testing.T) {
	url := pgtest.NewDatabase(t)
	admin := pgtest.AdminURL(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml := e2eConfig(stateDir, tg, model) + pgStorage(url)
	_, stop := startDaemon(t, yaml)
	defer stop()

	const total = 60
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			tg.DM(int64(7000+i%6), fmt.Sprintf("msg n%03d", i))
			sent.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	waitFor(t, 20*time.Second, "the first replies", func() bool { return sent.Load() >= 15 })
	end := outage(t, admin, pgDatabaseName(t, url))
	time.Sleep(3 * time.Second)
	end()
	<-done

	answered := func() map[string]int {
		n := map[string]int{}
		for _, s := range tg.Sent() {
			for _, f := range strings.Fields(s.Text) {
				if len(f) == 4 && f[0] == 'n' {
					n[f]++
				}
			}
		}
		return n
	}
	waitFor(t, 60*time.Second, "every message answered after the outage", func() bool { return len(answered()) == total })
	time.Sleep(500 * time.Millisecond) // late duplicates
	for m, c := range answered() {
		if c > 1 {
			t.Errorf("%s answered %d times", m, c)
		}
	}
}

// TestPostgresUnreachableAtStart: `gateway run` against a database that
// does not answer exits non-zero with an error naming the server.
func TestPostgresUnreachableAtStart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	port := freeAddr(t)[len("127.0.0.1:"):]
	yaml := fmt.Sprintf("stateDir: %s\nhttp: {listen: \"127.0.0.1:0\"}\nstorage: {backend: postgres, postgres: {url: \"postgres://gw:s3cret@127.0.0.1:%s/gateway?connect_timeout=2\"}}\n",
		filepath.Join(dir, "state"), port)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gatewayBin, "run", "--config", cfg)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("gateway run against an unreachable database: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "127.0.0.1:"+port) || !strings.Contains(string(out), "PostgreSQL") {
		t.Errorf("the error does not name the server:\n%s", out)
	}
	if strings.Contains(string(out), "s3cret") {
		t.Errorf("the error shows the password:\n%s", out)
	}
}
