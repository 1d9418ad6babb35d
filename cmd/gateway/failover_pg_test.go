package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// Polling failover (issue 13): two replicas on one database poll the same
// bot; only the holder of the leader lease "telegram:default" polls.

// Limits of the polling failover test.
const (
	// failoverBudget is issue 13's bound from the leader's SIGKILL to the
	// other replica's first getUpdates.
	failoverBudget = 15 * time.Second
	// failoverMax409 is how many 409 Conflict answers to getUpdates a
	// failover may cause: a few at the switch are a signal, more a storm.
	failoverMax409 = 3
	// failoverGrace is how long after a killed process is reaped a request
	// it wrote may still be in the fake's handlers.
	failoverGrace = 200 * time.Millisecond
	failoverChats = 8
)

// failoverRole is the leader role of the fake bot's default account.
const failoverRole = "telegram:default"

// sentRecord is a message the fake recorded, and when.
type sentRecord struct {
	telegramtest.Sent
	at time.Time
}

// failoverRun is the polling failover test's fakes, replicas and traffic.
type failoverRun struct {
	t        *testing.T
	url      string
	tg       *telegramtest.Server
	replicas map[string]*crashDaemon // by replica id

	mu   sync.Mutex
	sent []sentRecord // guarded by mu

	msgs atomic.Int64
	// endTraffic stops the traffic begin started and waits for it.
	endTraffic func()
}

// startFailoverRun starts the fakes and one daemon per replica id (not
// started), each with its own state dir, on the database url.
func startFailoverRun(t *testing.T, url string, ids ...string) *failoverRun {
	t.Helper()
	r := &failoverRun{t: t, url: url, replicas: map[string]*crashDaemon{}}
	r.tg = telegramtest.Start(t, telegramtest.Options{OnSent: func(m telegramtest.Sent, at time.Time) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sent = append(r.sent, sentRecord{Sent: m, at: at})
	}})
	model := openaitest.NewServer(t)
	model.SetReply(crashModel) // 20-150 ms, lines naming the markers answered
	for _, id := range ids {
		base := t.TempDir()
		r.replicas[id] = newCrashDaemon(t, base, filepath.Join(base, "state"), r.tg, model,
			"{mode: collect, debounce: 20ms}",
			fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q, maxConns: 8, statementTimeout: 5s, replicas: true, replicaId: %s}}\n", url, id))
	}
	return r
}

// traffic sends a DM naming marker m<i> every 50 ms over the chats until
// stop.
func (r *failoverRun) traffic(stop <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		r.tg.DM(crashChatID(i%failoverChats), fmt.Sprintf("msg m%d", i))
		r.msgs.Add(1)
	}
}

// leader is the replica holding the polling role now ("" for none).
func (r *failoverRun) leader(ctx context.Context, conn *pgx.Conn) string {
	r.t.Helper()
	var holder string
	err := conn.QueryRow(ctx, `SELECT holder FROM leases WHERE name = $1 AND expires_at > clock_timestamp()`,
		failoverRole).Scan(&holder)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		r.t.Fatal(err)
	}
	return holder
}

// waitLeader waits until some replica holds the polling role, and returns
// its id.
func (r *failoverRun) waitLeader(ctx context.Context, conn *pgx.Conn) string {
	r.t.Helper()
	var id string
	waitFor(r.t, 20*time.Second, "a replica leading "+failoverRole, func() bool {
		id = r.leader(ctx, conn)
		return id != ""
	})
	return id
}

// records returns a copy of what the fake recorded.
func (r *failoverRun) records() []sentRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sentRecord(nil), r.sent...)
}

// plain is the records as the crash test's counters take them.
func plain(recs []sentRecord) []telegramtest.Sent {
	out := make([]telegramtest.Sent, len(recs))
	for i, s := range recs {
		out[i] = s.Sent
	}
	return out
}

// firstPollAfter is when the first getUpdates arrived after t0 (zero if
// none did).
func (r *failoverRun) firstPollAfter(t0 time.Time) time.Time {
	for _, at := range r.tg.CallTimes("getUpdates") {
		if at.After(t0) {
			return at
		}
	}
	return time.Time{}
}

// metrics is replica d's /metrics page.
func metrics(t *testing.T, d *crashDaemon) string {
	t.Helper()
	res, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// begin starts both replicas, waits for one to lead (its metrics say so,
// the other's say it stands by) and starts the traffic; it returns the
// leader's and the standby's ids. endTraffic stops the traffic.
func (r *failoverRun) begin(ctx context.Context, conn *pgx.Conn) (leader, standby string) {
	t := r.t
	t.Helper()
	for _, id := range []string{"replica-a", "replica-b"} {
		r.replicas[id].start()
		t.Cleanup(r.replicas[id].stop)
	}
	leader = r.waitLeader(ctx, conn)
	standby = map[string]string{"replica-a": "replica-b", "replica-b": "replica-a"}[leader]
	waitFor(t, 10*time.Second, "the leader's role in its metrics", func() bool {
		return strings.Contains(metrics(t, r.replicas[leader]), fmt.Sprintf(`gateway_leader_role{replica_id=%q,role=%q} 1`, leader, failoverRole))
	})
	if m := metrics(t, r.replicas[standby]); !strings.Contains(m, fmt.Sprintf(`gateway_leader_role{replica_id=%q,role=%q} 0`, standby, failoverRole)) {
		t.Errorf("the standby's metrics do not show it standing by:\n%s", metricLines(m, "gateway_leader_role"))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.traffic(stop)
	}()
	r.endTraffic = func() { close(stop); <-done }
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			r.endTraffic()
		}
	})
	// Traffic flows for 2 s before the fault and is being answered (on a
	// loaded 2-core machine the first answer may take longer than that:
	// CI once saw none in 2 s).
	time.Sleep(2 * time.Second)
	waitFor(t, 30*time.Second, "a first answer to the traffic (leader "+leader+")", func() bool { return r.tg.SentCount() > 0 })
	return leader, standby
}

// waitPoll waits for the first getUpdates that arrives after from (a
// moment after the leader was disrupted, so none of its requests is
// still on its way) and returns when it came.
func (r *failoverRun) waitPoll(from time.Time) time.Time {
	r.t.Helper()
	var polled time.Time
	waitFor(r.t, 2*failoverBudget, "the standby's first getUpdates", func() bool {
		polled = r.firstPollAfter(from)
		return !polled.IsZero()
	})
	return polled
}

// failoverOutcome is what a polling failover test checks at its end.
type failoverOutcome struct {
	what      string        // the disruption, for messages
	gap       time.Duration // disruption to the standby's first poll
	at        time.Time     // the disruption (SIGKILL or SIGSTOP sent)
	cut       time.Time     // the disrupted replica sent nothing from then on
	conflicts int           // 409 answers before the disrupted replica came back
	// sameSessionTurns says the transcripts are read too: every record
	// appended once, never two replies to one input (no session ran
	// turns on two replicas at once).
	sameSessionTurns bool
}

// finish ends the traffic, waits for every message to be answered and
// checks the outcome: the gap within the budget, nothing lost, a chunk
// twice only in the disrupted replica's window, few 409s; then stops the
// replicas and checks the transcripts.
func (r *failoverRun) finish(o failoverOutcome) {
	t := r.t
	t.Helper()
	r.endTraffic()
	total := int(r.msgs.Load())
	var rep crashReport
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if rep = countReplies(r.tg.Sent(), total); len(rep.unanswered) == 0 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // late duplicates
	recs := r.records()
	rep = countReplies(plain(recs), total)
	conflicts := r.tg.ErrorAnswers("getUpdates", 409)
	outside := outsideKillWindow(recs, o.at, o.cut)

	t.Logf("%s: the standby polled %s later (budget %s); %d messages, %d reply chunks, %d chunks twice (in the disrupted replica's window), "+
		"409 Conflict answers: %d at the switch, %d in all (bound %d); %d getUpdates calls",
		o.what, o.gap.Round(time.Millisecond), failoverBudget, total, rep.chunks, rep.dupChunks,
		o.conflicts, len(conflicts), failoverMax409, len(r.tg.CallTimes("getUpdates")))
	if o.gap > failoverBudget {
		t.Errorf("the standby polled %s after %s, want at most %s", o.gap, o.what, failoverBudget)
	}
	if len(rep.unanswered) > 0 || rep.superseded > 0 {
		t.Errorf("%d messages never answered (%d counted superseded, none may be): %v", len(rep.unanswered), rep.superseded, firstN(rep.unanswered, 20))
	}
	if len(outside) > 0 {
		t.Errorf("%d reply chunks delivered twice outside the disrupted replica's window (it ends %s): %v",
			len(outside), o.cut.Format(time.StampMilli), firstN(outside, 5))
		// Who sent what around it: each replica's take-overs, lost
		// leases, resends and send retries.
		for name, d := range r.replicas {
			t.Logf("%s's log around the outbox and its leases:\n%s", name, strings.Join(grepLines(d.daemonLog(), 40,
				"took over", "lease lost", "lease was lost", "leader role", "lease renewal", "resen", "not delivered",
				"retrying", "given up", "left to"), "\n"))
		}
	}
	if len(conflicts) > failoverMax409 {
		t.Errorf("%d 409 Conflict answers to getUpdates (a storm), want at most %d: %+v", len(conflicts), failoverMax409, firstN(conflicts, 10))
	}
	var cfg string
	for _, d := range r.replicas {
		d.stop()
		cfg = d.cfg
	}
	if o.sameSessionTurns {
		checkCrashTranscriptsSeam(t, cfg, "")
	}
}

// openFailover makes the test's database and a connection to it.
func openFailover(t *testing.T) (url string, ctx context.Context, conn *pgx.Conn) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return url, ctx, conn
}

// TestPollingFailoverPostgres is issue 13's polling failover: two replicas
// of the built binary on one PostgreSQL poll the same (fake) bot under
// steady DM traffic; one holds the leader role and polls, the other stands
// by. The poller is SIGKILLed: its lease is not released, so the other
// replica takes the role when it expires (DefaultLeaderTTL, 10 s) and
// polls within 15 s; its /metrics and gateway doctor say so. The killed
// replica is then started again and stands by. From the fake's records:
// every message answered, exactly once (a chunk twice only in the
// documented window of the killed process's last send, reported), at
// most a few 409 Conflict answers; from the transcripts: every record
// appended once and no input answered twice.
func TestPollingFailoverPostgres(t *testing.T) {
	url, ctx, conn := openFailover(t)
	r := startFailoverRun(t, url, "replica-a", "replica-b")
	first, other := r.begin(ctx, conn)
	leader, standby := r.replicas[first], r.replicas[other]

	killAt := time.Now()
	leader.kill()
	cut := time.Now().Add(failoverGrace)
	gap := r.waitPoll(cut).Sub(killAt)
	if now := r.leader(ctx, conn); now != other {
		t.Errorf("after the kill %q holds %s, want %s", now, failoverRole, other)
	}
	conflicts := len(r.tg.ErrorAnswers("getUpdates", 409))
	checkSurvivorReports(t, standby, other)

	// The killed replica comes back and must stand by.
	time.Sleep(time.Second)
	leader.start()
	time.Sleep(3 * time.Second)
	if now := r.leader(ctx, conn); now != other {
		t.Errorf("after %s restarted, %q holds %s, want %s still", first, now, failoverRole, other)
	}
	r.finish(failoverOutcome{what: "leader " + first + " SIGKILLed", gap: gap, at: killAt, cut: cut, conflicts: conflicts, sameSessionTurns: true})
}

// failoverPause is how long TestPollingLeaderPausedPostgres keeps the
// leader stopped: past its leader lease, its delivery rows' lease and its
// session leases (10 s each after the last renewal) and the standby's
// take-over loop (2 s), so the standby takes the polling and the paused
// replica's messages over, and the paused replica's writes are fenced
// when it wakes.
const failoverPause = 15 * time.Second

// TestPollingLeaderPausedPostgres: the polling leader is SIGSTOPped
// (a hung process, a VM paused) for longer than its lease under steady
// traffic: the standby polls within 15 s. When the paused replica wakes it
// must find its role lost and stop polling: at most a few 409 Conflict
// answers (its first poll may end the new leader's once), the standby
// keeps the role, every message is answered, no chunk twice outside the
// window of what the paused replica was sending when it stopped, and no
// session ran turns on both replicas at once (the transcripts: every
// record once, never two replies to one input).
func TestPollingLeaderPausedPostgres(t *testing.T) {
	url, ctx, conn := openFailover(t)
	r := startFailoverRun(t, url, "replica-a", "replica-b")
	first, other := r.begin(ctx, conn)
	leader := r.replicas[first]

	stopAt := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leader.cmd.Process.Signal(syscall.SIGCONT) })
	cut := stopAt.Add(failoverGrace)
	gap := r.waitPoll(cut).Sub(stopAt)
	conflicts := len(r.tg.ErrorAnswers("getUpdates", 409))
	time.Sleep(time.Until(stopAt.Add(failoverPause)))
	if err := leader.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, first+" standing by on its /metrics after it woke", func() bool {
		return strings.Contains(metrics(t, leader), fmt.Sprintf(`gateway_leader_role{replica_id=%q,role=%q} 0`, first, failoverRole))
	})
	time.Sleep(3 * time.Second)
	if now := r.leader(ctx, conn); now != other {
		t.Errorf("after %s woke, %q holds %s, want %s still", first, now, failoverRole, other)
	}
	log := leader.daemonLog()
	t.Logf("after %s woke: %d 409 answers; its log: %d turns or replies stopped by a lost session lease, %d batches left to the other replica",
		first, len(r.tg.ErrorAnswers("getUpdates", 409))-conflicts,
		strings.Count(log, "the session's lease was lost"), strings.Count(log, "messages taken over by another replica; left to it"))
	r.finish(failoverOutcome{what: fmt.Sprintf("leader %s SIGSTOPped for %s", first, failoverPause), gap: gap, at: stopAt, cut: cut, conflicts: conflicts,
		sameSessionTurns: true})
}

// outsideKillWindow returns the reply chunks delivered twice that the
// documented window does not explain: a chunk may reach a chat twice only
// when the process that sent it died (or froze) right after Telegram
// accepted it, before its mark. So its first copy was recorded before
// that process was gone (cut: the disruption at, plus the fake's grace to
// record a request sent before it) and was the last message sent to that
// chat before then (until the disruption only the leader, which accepts
// every update, runs turns), and the second copy came after the
// disruption: from the replica that took the reply over, which may be
// within the grace (a killed replica's owner lock goes with it, and the
// other's look for orphans can come at once).
func outsideKillWindow(recs []sentRecord, at, cut time.Time) []string {
	firstAt := map[string]int{}
	var out []string
	for i, s := range recs {
		if s.Method != "sendMessage" || !strings.HasPrefix(s.Text, "[") {
			continue
		}
		key := fmt.Sprintf("%d|%s", s.ChatID, s.Text)
		j, dup := firstAt[key]
		if !dup {
			firstAt[key] = i
			continue
		}
		f := recs[j]
		ok := !f.at.After(cut) && s.at.After(at)
		for k := j + 1; ok && k < i && !recs[k].at.After(cut); k++ {
			if recs[k].ChatID == s.ChatID && recs[k].Method == "sendMessage" {
				ok = false // more was sent to that chat before the cut
			}
		}
		if !ok {
			out = append(out, fmt.Sprintf("chat %d at %s and %s: %s", s.ChatID, f.at.Format(time.StampMilli),
				s.at.Format(time.StampMilli), strings.SplitN(s.Text, "\n", 2)[0]))
		}
	}
	return out
}

// metricLines is the lines of a /metrics page s that contain sub.
func metricLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// checkSurvivorReports: the replica that took the polling role over shows
// it on /metrics (its id, one leader lease, the replica gauges read) and
// in gateway doctor run with its config (its id, the role with the
// second token: the killed leader had the first).
func checkSurvivorReports(t *testing.T, d *crashDaemon, id string) {
	t.Helper()
	var m string
	waitFor(t, 10*time.Second, id+"'s leader lease on /metrics", func() bool {
		m = metrics(t, d)
		return strings.Contains(m, `gateway_leases_held{kind="leader"} 1`+"\n")
	})
	for _, line := range []string{
		fmt.Sprintf(`gateway_replica_info{replica_id=%q} 1`, id),
		fmt.Sprintf(`gateway_leader_role{replica_id=%q,role=%q} 1`, id, failoverRole),
		"gateway_replica_status_up 1",
		"gateway_ingress_unclaimed ",
	} {
		if !strings.Contains(m, line) {
			t.Errorf("%s's /metrics lacks %q:\n%s", id, line, metricLines(m, "gateway_"))
		}
	}
	doc := gw(t, d.cfg, "doctor")
	for _, want := range []string{
		"storage: this config's replica id: " + id + "\n",
		"replica " + id + " (this config): live, ",
		"leases: " + failoverRole + " (token 2, ",
		"storage: unclaimed ingress: ",
	} {
		if !strings.Contains(doc.Stdout, want) {
			t.Errorf("doctor with %s's config lacks %q:\n%s\n%s", id, want, doc.Stdout, doc.Stderr)
		}
	}
}

// TestOutsideKillWindow pins the rule failover tests judge a chunk sent
// twice by: its first copy was the chat's last message before the cut and
// its second came after the disruption, even within the fake's grace (a
// SIGKILLed replica's replies are taken over as soon as the other looks
// for orphans: the old rule, second copy after the cut, flagged a copy 32
// ms after the kill).
func TestOutsideKillWindow(t *testing.T) {
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	cut := at.Add(failoverGrace)
	ms := func(d int) time.Time { return at.Add(time.Duration(d) * time.Millisecond) }
	rec := func(chat int64, text string, when time.Time) sentRecord {
		return sentRecord{Sent: telegramtest.Sent{Method: "sendMessage", ChatID: chat, Text: text}, at: when}
	}
	for _, tc := range []struct {
		name    string
		recs    []sentRecord
		outside int
	}{
		{"taken over within the grace", []sentRecord{rec(1, "[m1] a", ms(-5)), rec(1, "[m1] a", ms(27))}, 0},
		{"taken over after the grace", []sentRecord{rec(1, "[m1] a", ms(-5)), rec(1, "[m1] a", ms(900))}, 0},
		{"sent twice before the disruption", []sentRecord{rec(1, "[m1] a", ms(-40)), rec(1, "[m1] a", ms(-8))}, 1},
		{"first copy after the cut", []sentRecord{rec(1, "[m1] a", ms(400)), rec(1, "[m1] a", ms(900))}, 1},
		{"not the chat's last before the cut", []sentRecord{rec(1, "[m1] a", ms(-30)), rec(1, "[m2] b", ms(-10)),
			rec(1, "[m1] a", ms(900))}, 1},
		{"another chat between", []sentRecord{rec(1, "[m1] a", ms(-30)), rec(2, "[m2] b", ms(-10)),
			rec(1, "[m1] a", ms(50))}, 0},
	} {
		if got := outsideKillWindow(tc.recs, at, cut); len(got) != tc.outside {
			t.Errorf("%s: %d outside the window (%v), want %d", tc.name, len(got), got, tc.outside)
		}
	}
}
