package gatewayd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// poll is one getUpdates call as a daemon's HTTP client saw it.
type poll struct {
	who        string
	start, end time.Time
	code       int // HTTP status; 0 when the call was cancelled
}

// polls records the getUpdates calls of every daemon of a test.
type polls struct {
	mu  sync.Mutex
	all []poll
}

func (p *polls) add(x poll) {
	p.mu.Lock()
	p.all = append(p.all, x)
	p.mu.Unlock()
}

func (p *polls) list() []poll {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.all)
}

// firstBy is the start of who's first getUpdates after t, or zero.
func (p *polls) firstBy(who string, after time.Time) time.Time {
	for _, x := range p.list() {
		if x.who == who && x.start.After(after) {
			return x.start
		}
	}
	return time.Time{}
}

// pollRecorder is a daemon's HTTP transport: it records the daemon's
// getUpdates calls from the client's side (when they started and ended).
type pollRecorder struct {
	who  string
	base http.RoundTripper
	rec  *polls
}

func (r *pollRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/getUpdates") {
		return r.base.RoundTrip(req)
	}
	start := time.Now()
	resp, err := r.base.RoundTrip(req)
	p := poll{who: r.who, start: start, end: time.Now()}
	if err == nil {
		p.code = resp.StatusCode
	}
	r.rec.add(p)
	return resp, err
}

// replica is one in-process daemon of a multi-replica test.
type replica struct {
	who    string
	addr   string // the HTTP API
	cancel context.CancelFunc
	done   chan error
}

// startReplica runs a daemon on the shared database; crashy makes its
// stop leave its leases to expire, as a killed process does.
func startReplica(t *testing.T, who, yaml, url string, rec *polls, crashy bool) *replica {
	t.Helper()
	client := &http.Client{Transport: &pollRecorder{who: who, base: http.DefaultTransport, rec: rec}}
	return startReplicaClient(t, who, yaml, url, client, crashy)
}

// startReplicaClient is startReplica with the adapters' HTTP client.
func startReplicaClient(t *testing.T, who, yaml, url string, client *http.Client, crashy bool) *replica {
	t.Helper()
	cfg, err := configs.LoadBytes([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, cfg *configs.Config) (sessions.Backend, error) {
		return pgstore.OpenBackend(ctx, pgstore.BackendOptions{
			Options:   pgstore.Options{URL: url, Logger: zaptest.NewLogger(t).Named(who)},
			Reset:     cfg.Session.ResetConfig(),
			ReplicaID: "replica-" + who, KeepLeasesOnStop: crashy,
		})
	}
	ready := make(chan string, 1)
	d, err := New(cfg, Options{Logger: zaptest.NewLogger(t).Named(who), HTTPClient: client, Grace: 5 * time.Second,
		OpenBackend: open, OnReady: func(addr string) { ready <- addr }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{who: who, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	select {
	case r.addr = <-ready:
	case err := <-r.done:
		cancel()
		t.Fatalf("replica %s exited: %v", who, err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("replica %s not ready", who)
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *replica) stop(t *testing.T) {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok && err != nil {
			t.Errorf("replica %s: Run = %v", r.who, err)
		}
		if ok {
			close(r.done)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("replica %s did not stop", r.who)
	}
}

func replicaConfig(stateDir string, tg *telegramtest.Server, model *openaitest.Server, url string) string {
	return fmt.Sprintf(`stateDir: %s
http: {listen: "127.0.0.1:0"}
storage: {backend: postgres, postgres: {url: %q, replicas: true}}
channels:
  telegram:
    accounts:
      default:
        token: %q
        apiRoot: %q
        dmPolicy: open
        pollTimeoutSeconds: 1
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
`, stateDir, url, tg.Token(), tg.URL, model.BaseURL())
}

// TestTelegramPollerFailover: three daemons on one database poll one bot:
// only the leader calls getUpdates; when it stops cleanly its lease is
// released and a stand-by polls without waiting for it to expire, when that one stops as a crash does (its lease kept) the
// last polls within 15 s; no two daemons ever poll at once (so no 409), and
// every DM injected throughout is answered exactly once (what a stopped
// replica left queued, by the next replica's start).
func TestTelegramPollerFailover(t *testing.T) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	rec := &polls{}
	yaml := func(who string) string {
		return replicaConfig(filepath.Join(t.TempDir(), who), tg, model, url)
	}

	// DMs from distinct users all along, one every 150 ms.
	var sent atomic.Int32
	injectCtx, stopInject := context.WithCancel(context.Background())
	injected := make(chan struct{})
	injectDMs := func() {
		defer close(injected)
		for injectCtx.Err() == nil {
			n := sent.Add(1)
			tg.DM(int64(5000+n), fmt.Sprintf("m%d", n))
			select {
			case <-injectCtx.Done():
			case <-time.After(150 * time.Millisecond):
			}
		}
	}
	defer stopInject()

	// Three replicas up before any traffic (a replica starting later is
	// TestReplicaTakesOverStoppedReplicasWork's case).
	// a leads and stops cleanly; b and c stop as a crash does.
	a := startReplica(t, "a", yaml("a"), url, rec, false)
	waitUntil(t, 10*time.Second, "a polls", func() bool { return !rec.firstBy("a", time.Time{}).IsZero() })
	standby := map[string]*replica{
		"b": startReplica(t, "b", yaml("b"), url, rec, true),
		"c": startReplica(t, "c", yaml("c"), url, rec, true),
	}
	go injectDMs()
	time.Sleep(1500 * time.Millisecond)
	for who := range standby {
		if !rec.firstBy(who, time.Time{}).IsZero() {
			t.Fatalf("stand-by %s polled while the leader ran", who)
		}
	}

	// A clean stop releases the lease: a stand-by polls at once (the
	// lease is free, or taken already, when a's Run has returned: not left
	// to expire).
	if !leaseHeldBy(t, url, "telegram:default", "replica-a") {
		t.Fatal("a polls but the leases table does not show it holding telegram:default")
	}
	stopped := time.Now()
	a.stop(t)
	if held := leaseHeldBy(t, url, "telegram:default", "replica-a"); held {
		t.Error("a stopped cleanly but still holds the poller's lease: a stand-by would wait for it to expire")
	}
	var next string
	waitUntil(t, 5*time.Second, "a stand-by polls", func() bool {
		for who := range standby {
			if !rec.firstBy(who, stopped).IsZero() {
				next = who
				return true
			}
		}
		return false
	})
	clean := rec.firstBy(next, stopped).Sub(stopped)
	t.Logf("clean handover: %s polled %s after a's stop began", next, clean) // a figure, not a bound (CI run 20: 2.4 s at load 16)

	// A crash keeps the lease until it expires: the last one polls within 15 s.
	time.Sleep(time.Second)
	leader := standby[next]
	delete(standby, next)
	var last string
	for who := range standby {
		last = who
	}
	crashed := time.Now()
	leader.stop(t)
	waitUntil(t, 20*time.Second, last+" polls", func() bool { return !rec.firstBy(last, crashed).IsZero() })
	failover := rec.firstBy(last, crashed).Sub(crashed)
	t.Logf("failover after a crash-like stop of %s: %s polled %s later", next, last, failover)
	if failover > 15*time.Second {
		t.Errorf("failover took %s, want ≤ 15s", failover)
	}
	if failover < 3*time.Second {
		t.Errorf("%s polled %s after the crash: the crashed leader's lease was released, not left to expire", last, failover)
	}
	time.Sleep(time.Second)
	stopInject()
	<-injected
	total := int(sent.Load())

	// A stopping dispatcher leaves queued (held) records in the journal;
	// running replicas take them over (TestReplicaTakesOverStoppedReplicasWork).
	// Here, once the last leader is idle it stops, and a fresh replica's
	// start resumes what the stopped ones left.
	idle := 0
	for prev := -1; idle < 20; time.Sleep(100 * time.Millisecond) {
		if n := tg.SentCount(); n == prev {
			idle++
		} else {
			prev, idle = n, 0
		}
	}
	standby[last].stop(t)
	startReplica(t, "d", yaml("d"), url, rec, false)

	// Every DM answered exactly once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tg.WaitSent(ctx, total); err != nil {
		t.Errorf("%d replies of %d DMs: %v", tg.SentCount(), total, err)
	}
	time.Sleep(500 * time.Millisecond) // a duplicate would come now
	count := map[string]int{}
	for _, s := range tg.Sent() {
		count[s.Text]++
	}
	for n := 1; n <= total; n++ {
		if c := count[fmt.Sprintf("reply: m%d", n)]; c != 1 {
			t.Errorf("m%d answered %d times", n, c)
		}
	}
	if len(tg.Sent()) != total {
		t.Errorf("%d messages sent for %d DMs", len(tg.Sent()), total)
	}

	// Never two pollers at once, and no 409.
	all := rec.list()
	slices.SortFunc(all, func(x, y poll) int { return x.start.Compare(y.start) })
	for i, p := range all {
		if p.code == http.StatusConflict {
			t.Errorf("%s got 409 at %v", p.who, p.start.Format(time.StampMilli))
		}
		for _, q := range all[i+1:] {
			if q.who != p.who && q.start.Before(p.end) {
				t.Errorf("%s polled from %v while %s's poll ran until %v", q.who, q.start.Format(time.StampMicro),
					p.who, p.end.Format(time.StampMicro))
			}
		}
	}
	t.Logf("%d DMs, %d getUpdates calls", total, len(all))
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDiscordGatewayUnderLeaderLease: two daemons on one database with one
// Discord bot open one gateway connection between them; when the leader
// stops the other connects within 2 s.
func TestDiscordGatewayUnderLeaderLease(t *testing.T) {
	url := pgtest.NewDatabase(t)
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	defer fake.Close()
	model := openaitest.NewServer(t)
	start := func(who string) *replica {
		yaml := fmt.Sprintf(`stateDir: %s
http: {listen: "127.0.0.1:0"}
channels: {discord: {accounts: {default: {token: tok}}}}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
`, filepath.Join(t.TempDir(), who), model.BaseURL())
		return startReplicaClient(t, who, yaml, url, fake.Client(), false)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := start("a")
	if err := fake.WaitReady(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	b := start("b")
	time.Sleep(1500 * time.Millisecond)
	if n, _ := fake.Sessions(); n != 1 {
		t.Fatalf("%d gateway sessions identified with two daemons up, want 1", n)
	}
	for _, c := range []struct {
		r    *replica
		want string
	}{{a, "1"}, {b, "0"}} {
		line := `gateway_leader_role{replica_id="replica-` + c.r.who + `",role="discord:default"} ` + c.want + "\n"
		if m := scrape(t, c.r.addr); !strings.Contains(m, line) {
			t.Errorf("%s's /metrics lacks %q", c.r.who, line)
		}
	}
	stopped := time.Now()
	a.stop(t)
	if err := fake.WaitReady(ctx, 2, 0); err != nil {
		t.Fatal(err)
	}
	took := time.Since(stopped)
	t.Logf("discord handover: the stand-by connected %s after the leader's stop began", took)
	// A handover, not an expiry: the stand-by connected before the
	// leader's lease could have run out (the time itself is a figure; the
	// old leader's Close waits up to a second for the close handshake).
	if took >= pgstore.DefaultLeaderTTL {
		t.Errorf("handover took %s: the stand-by waited for the lease to expire (ttl %s), the release was not seen", took, pgstore.DefaultLeaderTTL)
	}
}

// scrape returns a daemon's /metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOpenPostgresReplicaID: storage.postgres.replicaId names the replica
// (the holder of its leases); without it each start gets a new id.
func TestOpenPostgresReplicaID(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	ids := map[string]bool{}
	for _, id := range []string{"gw-1", "", ""} {
		cfg := testConfig(t, fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q, replicaId: %q, replicas: true}}\n", url, id))
		b, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t), Passive: true})
		if err != nil {
			t.Fatal(err)
		}
		lr, ok := b.(leaderRunner)
		if !ok {
			t.Fatalf("the postgres backend (%T) runs no leader roles", b)
		}
		got := lr.ReplicaID()
		if id != "" && got != id || id == "" && (got == "" || ids[got]) {
			t.Errorf("replicaId %q: ReplicaID() = %q (seen %v)", id, got, ids)
		}
		ids[got] = true
		_ = b.Close()
	}
}

// leaseHeldBy reports whether holder holds the lease name now (the
// database's clock), read straight from the leases table.
func leaseHeldBy(t *testing.T, url, name, holder string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var held bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp())`,
		name, holder).Scan(&held)
	if err != nil {
		t.Fatal(err)
	}
	return held
}
