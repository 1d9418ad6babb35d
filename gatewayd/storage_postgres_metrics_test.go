package gatewayd

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestReplicaCollector: the replica gauges carry what the status read
// says; when the database does not answer, only the id and up 0.
func TestReplicaCollector(t *testing.T) {
	st := pgstore.ReplicaStatus{ReplicaID: "gw-1", LeaderRoles: []string{"discord:main", "telegram:main"}, SessionLeases: 7,
		Ingress: pgstore.IngressLag{Unclaimed: 3, OldestAge: 1500 * time.Millisecond}}
	var fail error
	c := newReplicaCollector(func(ctx context.Context) (pgstore.ReplicaStatus, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the status read has no deadline")
		}
		if fail != nil {
			return pgstore.ReplicaStatus{ReplicaID: st.ReplicaID}, fail
		}
		return st, nil
	}, zaptest.NewLogger(t))
	want := `
# HELP gateway_ingress_unclaimed Accepted messages nobody works on: pending records whose owner died or whose lease ran out, before a replica takes them over.
# TYPE gateway_ingress_unclaimed gauge
gateway_ingress_unclaimed 3
# HELP gateway_ingress_unclaimed_age_seconds Age of the oldest unclaimed accepted message (0 when there is none).
# TYPE gateway_ingress_unclaimed_age_seconds gauge
gateway_ingress_unclaimed_age_seconds 1.5
# HELP gateway_leases_held Leases this replica holds, by kind: leader (a Telegram poller or Discord connection per bot account) or session (a turn running).
# TYPE gateway_leases_held gauge
gateway_leases_held{kind="leader"} 2
gateway_leases_held{kind="session"} 7
# HELP gateway_replica_info This replica's id on the shared database (always 1).
# TYPE gateway_replica_info gauge
gateway_replica_info{replica_id="gw-1"} 1
# HELP gateway_replica_status_up 1 when the scrape read the replica gauges from the database, 0 when it could not (they are then absent).
# TYPE gateway_replica_status_up gauge
gateway_replica_status_up 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	fail = errors.New("pgstore: replica status: connection refused")
	want = `
# HELP gateway_replica_info This replica's id on the shared database (always 1).
# TYPE gateway_replica_info gauge
gateway_replica_info{replica_id="gw-1"} 1
# HELP gateway_replica_status_up 1 when the scrape read the replica gauges from the database, 0 when it could not (they are then absent).
# TYPE gateway_replica_status_up gauge
gateway_replica_status_up 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Errorf("database down: %v", err)
	}
}

// TestStorageCollector: the round-trip and commit counters carry the
// backend's counts by operation.
func TestStorageCollector(t *testing.T) {
	c := newStorageCollector(func() []pgstore.OpStats {
		return []pgstore.OpStats{{Op: "accept", RoundTrips: 3, Commits: 3}, {Op: "index", RoundTrips: 4, Commits: 1}}
	})
	want := `
# HELP gateway_storage_commits_total Database transactions committed (a COMMIT, a batch or a statement outside a transaction) by backend operation.
# TYPE gateway_storage_commits_total counter
gateway_storage_commits_total{op="accept"} 3
gateway_storage_commits_total{op="index"} 1
# HELP gateway_storage_roundtrips_total Database round trips (a statement, or a pipelined batch of them) by backend operation.
# TYPE gateway_storage_roundtrips_total counter
gateway_storage_roundtrips_total{op="accept"} 3
gateway_storage_roundtrips_total{op="index"} 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestReplicaMetricsOnPostgresOnly: a daemon on postgres serves its
// replica id, its leader lease (it polls the bot) and the unclaimed
// ingress lag on /metrics; a daemon on the files backend serves none of
// them.
func TestReplicaMetricsOnPostgresOnly(t *testing.T) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := startReplica(t, "a", replicaConfig(filepath.Join(t.TempDir(), "a"), tg, model, url), url, &polls{}, false)
	var m string
	// The lease gauge and the round-trip counters are read at different
	// moments of a scrape (the gauge from a status read cached up to 2 s):
	// wait for both rather than take the first scrape that shows the lease.
	waitUntil(t, 10*time.Second, "the leader lease and its round trips on /metrics", func() bool {
		m = scrape(t, r.addr)
		return strings.Contains(m, "gateway_leases_held{kind=\"leader\"} 1\n") &&
			strings.Contains(m, `gateway_storage_roundtrips_total{op="lease"} `)
	})
	for _, line := range []string{
		`gateway_replica_info{replica_id="replica-a"} 1`,
		`gateway_replica_status_up 1`,
		`gateway_leases_held{kind="session"} `,
		`gateway_ingress_unclaimed 0`,
		`gateway_ingress_unclaimed_age_seconds 0`,
		`gateway_storage_roundtrips_total{op="lease"} `,
		`gateway_storage_commits_total{op="lease"} `,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics on postgres lacks %q:\n%s", line, m)
		}
	}

	files := startFilesDaemon(t)
	m = scrape(t, files)
	for _, name := range []string{"gateway_replica_info", "gateway_replica_status_up", "gateway_leases_held", "gateway_ingress_unclaimed",
		"gateway_storage_roundtrips_total"} {
		if strings.Contains(m, name) {
			t.Errorf("/metrics on the files backend shows %s", name)
		}
	}
	if !strings.Contains(m, "gateway_journal_pending") {
		t.Errorf("/metrics on the files backend lacks its journal gauges:\n%s", m)
	}
}

// startFilesDaemon runs a daemon on the files backend with no channel and
// returns its HTTP address; it stops with the test.
func startFilesDaemon(t *testing.T) string {
	t.Helper()
	cfg := testConfig(t, `http: {listen: "127.0.0.1:0"}
providers: {local: {type: echo}}
agents: {defaults: {model: local/echo}, list: [{id: main}]}
`)
	return runTestDaemon(t, cfg, Options{Logger: zaptest.NewLogger(t)})
}

// runTestDaemon runs a daemon of cfg and opts (its OnReady set here) until
// the test ends, and returns its HTTP address once it is ready; the
// test's cleanup stops it and reports an error Run returns.
func runTestDaemon(t testing.TB, cfg *configs.Config, opts Options) string {
	t.Helper()
	addr, _ := startTestDaemon(t, cfg, opts)
	return addr
}

// startTestDaemon is runTestDaemon that also returns stop, which ends the
// daemon and waits for Run to return (the test's cleanup calls it too;
// only the first call stops).
func startTestDaemon(t testing.TB, cfg *configs.Config, opts Options) (addr string, stop func()) {
	t.Helper()
	if !strings.HasSuffix(cfg.HTTP.Listen, ":0") {
		// The default 127.0.0.1:8787 is taken by a running gateway, or by
		// this test in another run on the machine (two CIs side by side).
		t.Fatalf("test daemon listens on %q: give its config http: {listen: \"127.0.0.1:0\"}", cfg.HTTP.Listen)
	}
	ready := make(chan string, 1)
	opts.OnReady = func(addr string) { ready <- addr }
	d, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop within 30 s")
		}
	})
	t.Cleanup(stop)
	select {
	case addr = <-ready:
		return addr, stop
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon not ready")
	}
	return "", stop
}
