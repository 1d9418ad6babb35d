package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// The multi-replica run's traffic and its faults, as offsets from the
// start of the traffic.
const (
	replicaChats      = 15
	replicaInterval   = 70 * time.Millisecond // one message every interval, chats in turn: ~1 a second per chat
	replicaKillAt     = 10 * time.Second      // SIGKILL replica 1
	replicaRestart    = 22 * time.Second      // and start it again
	replicaStopAt     = 28 * time.Second      // SIGSTOP replica 2
	replicaStopFor    = 20 * time.Second
	replicaOutageAt   = 54 * time.Second // the database goes away
	replicaOutage     = 5 * time.Second
	replicaTrafficFor = 70 * time.Second
)

// TestReplicasWebhookFailover (issue 13): three replicas of the built
// binary on one PostgreSQL database, the fake Telegram in webhook mode
// posting updates round-robin over them as a load balancer would (a
// replica that fails or does not answer in 2 s is passed over for 2 s and
// the update goes to the next), the fake model answering after 100-300
// ms. Under steady traffic over 15 DM chats (one session each, collect
// mode) replica 1 is SIGKILLed and later started again, replica 2 is
// SIGSTOPped for 20 s (its leases expire meanwhile: once continued it must
// not write or send with them), and the database "restarts" (every
// connection terminated, new ones refused for 5 s).
//
// Checked from the fake Telegram's record, the fake model's record and the
// transcripts: no input lost; no input answered by two different replies;
// a chunk delivered twice only inside the documented window (see
// checkReplies: the chunk a replica was delivering at the instant it was
// SIGKILLed or SIGSTOPped); per chat, replies answer the inputs in order
// (collect mode may answer several in one reply) and the model sees them
// in order; never two requests of one session in flight at the model;
// each replica ready again by itself after the SIGSTOP and the outage, and
// accepting webhooks again.
func TestReplicasWebhookFailover(t *testing.T) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	rm := newReplicaModel(model)
	reps, hooks := startReplicas(t, tg, model, url)
	waitFor(t, 20*time.Second, "the webhook registered", func() bool { _, ok := tg.Webhook(); return ok })

	bal, stopBal := runBalancer(t, tg, hooks, telegramtest.BalancerOptions{Timeout: 2 * time.Second, FailFor: 2 * time.Second})

	tr := startReplicaTraffic(tg)
	faults, faultAt := runReplicaFaults(t, reps, url, tr.begin)
	afterOutage := bal.Stats()
	time.Sleep(time.Until(tr.begin.Add(replicaTrafficFor)))
	sentPer, queuedAt := tr.stop()
	total := 0
	for _, n := range sentPer {
		total += n
	}
	t.Logf("%s: traffic stopped, %d messages", since(tr.begin), total)

	rep := awaitReplies(tg, sentPer, queuedAt, faults)
	logStuck(t, url, reps, rep.lost)
	for _, r := range reps {
		if !r.waitReady(5 * time.Second) {
			t.Errorf("%s not ready at the end of the run", r.tag)
		}
	}
	stopBal()
	stats := bal.Stats()
	rep = checkReplies(tg, sentPer, queuedAt, faults)

	for i, r := range reps {
		if n := stats[i].Accepted - afterOutage[i].Accepted; n == 0 {
			t.Errorf("%s accepted no webhook update after the outage (balancer: %+v)", r.tag, stats[i])
		}
	}
	t.Logf("%d messages, %d replies, %d chunks twice in the window, webhook deliveries per replica %+v",
		total, rep.replies, rep.inWindow, stats)
	// A figure, not a check: how often the stopped replica found, once
	// continued, that a turn's lease had gone (dispatch logs each).
	t.Logf("%s logged %d turns stopped for a lost lease", faults.stopped,
		len(grepLines(reps[1].log(faults.stopped), 1<<20, "lease was lost")))
	logLatency(t, rep.latency, queuedAt, faultAt)
	problems(t, "inputs never answered", rep.lost)
	problems(t, "inputs answered twice", rep.twice)
	problems(t, "chunks delivered twice outside the documented window", rep.outside)
	window := tr.stopWindowChats(bal, 1, faultAt["SIGSTOP"])
	problems(t, "replies out of order", inWindow(t, "replies out of order", rep.order, window))
	problems(t, "other messages to the chats (notices, refusals)", rep.notices)
	if d := tr.deliveries(bal, append(firstN(rep.lost, 3), firstN(rep.order, 5)...), 12); len(d) > 0 {
		t.Logf("how the inputs of those problems were delivered:\n%s", strings.Join(d, "\n"))
	}
	checkModel(t, rm, model, window)

	for _, r := range reps {
		r.stop()
	}
	n, bad := checkReplicaTranscripts(t, reps[2].cfgPath(), sentPer)
	problems(t, "transcript problems", inWindow(t, "transcript problems", bad, window))
	t.Logf("%d transcripts checked; the run took %s", n, since(tr.begin))
}

// runBalancer posts tg's updates to hooks round-robin until stop is
// called (or the test ends); stop waits for it to end.
func runBalancer(t *testing.T, tg *telegramtest.Server, hooks []string, opts telegramtest.BalancerOptions) (bal *telegramtest.Balancer, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	bal = telegramtest.NewBalancer(tg, hooks, opts)
	done := make(chan struct{})
	go func() { defer close(done); _ = bal.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return bal, stop
}

// awaitReplies checks the fake's record until no input is unanswered (60 s
// at most), then a second more for late duplicates, and returns the last
// check.
func awaitReplies(tg *telegramtest.Server, sentPer []int, queuedAt map[string]time.Time, f replicaFaults) replyReport {
	var rep replyReport
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if rep = checkReplies(tg, sentPer, queuedAt, f); len(rep.lost) == 0 {
			break
		}
	}
	time.Sleep(time.Second) // late duplicates
	return rep
}

// startReplicas starts the three replicas and returns them with their
// webhook URLs. When the test ends they are stopped, and if it failed the
// lines of their logs about take-overs, leases and fencing are logged.
func startReplicas(t *testing.T, tg *telegramtest.Server, model *openaitest.Server, url string) ([]*replica, []string) {
	t.Helper()
	reps := make([]*replica, 3)
	var hooks []string
	for i := range reps {
		reps[i] = newReplica(t, i+1, tg, model, url)
		hooks = append(hooks, reps[i].hook())
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, r := range reps {
			wg.Add(1)
			go func() { defer wg.Done(); r.stop() }()
		}
		wg.Wait()
		if t.Failed() {
			for _, r := range reps {
				t.Logf("replica %s, take-overs, leases, fencing:\n%s", r.id, strings.Join(grepLines(r.log(""), 40,
					"fenc", "Fenc", "took over", "lease", "panic", "stale"), "\n"))
			}
		}
	})
	for _, r := range reps {
		r.start()
	}
	return reps, hooks
}

// runReplicaFaults plays the faults at their offsets from begin: SIGKILL
// replica 1 and start it again, SIGSTOP replica 2 for replicaStopFor, cut
// the database off for replicaOutage; it checks that the replicas are
// ready again by themselves after each. It returns the signals sent and
// when each fault began.
func runReplicaFaults(t *testing.T, reps []*replica, url string, begin time.Time) (replicaFaults, map[string]time.Time) {
	t.Helper()
	at := func(d time.Duration) { time.Sleep(time.Until(begin.Add(d))) }
	faults := replicaFaults{killed: map[string]bool{}}
	faultAt := map[string]time.Time{}

	at(replicaKillAt)
	killed := reps[0].tag
	reps[0].kill()
	faults.killed[killed] = true
	faultAt["SIGKILL"] = time.Now()
	t.Logf("%s: SIGKILL %s", since(begin), killed)

	at(replicaRestart)
	reps[0].start()
	t.Logf("%s: started %s", since(begin), reps[0].tag)

	at(replicaStopAt)
	faults.stopped = reps[1].tag
	reps[1].signal(syscall.SIGSTOP)
	faultAt["SIGSTOP"] = time.Now()
	t.Logf("%s: SIGSTOP %s", since(begin), faults.stopped)
	time.Sleep(replicaStopFor)
	reps[1].signal(syscall.SIGCONT)
	faults.contAt = time.Now()
	t.Logf("%s: SIGCONT %s", since(begin), faults.stopped)
	if !reps[1].waitReady(20 * time.Second) {
		t.Errorf("%s not ready within 20 s of SIGCONT", faults.stopped)
	}

	at(replicaOutageAt)
	end := outage(t, pgtest.AdminURL(t), pgDatabaseName(t, url))
	faultAt["outage"] = time.Now()
	t.Logf("%s: database outage", since(begin))
	time.Sleep(replicaOutage)
	end()
	t.Logf("%s: database back", since(begin))
	for _, r := range reps {
		if !r.waitReady(30 * time.Second) {
			t.Errorf("%s not ready within 30 s of the database's return", r.tag)
		}
	}
	return faults, faultAt
}

// problems fails t with the count and the first ten of list, if any.
func problems(t *testing.T, what string, list []string) {
	t.Helper()
	if len(list) > 0 {
		t.Errorf("%d %s: %s", len(list), what, strings.Join(firstN(list, 10), "; "))
	}
}

// logStuck logs, while the replicas still run, what the database holds
// for the first two chats with inputs never answered.
func logStuck(t *testing.T, url string, reps []*replica, lost []string) {
	t.Helper()
	var stuck []int
	for _, in := range lost {
		var c, n int
		if _, err := fmt.Sscanf(in, "c%d n%d", &c, &n); err != nil || slices.Contains(stuck, c) || len(stuck) == 2 {
			continue
		}
		stuck = append(stuck, c)
		st, err := pendingState(context.Background(), url, c, owners(reps))
		if err != nil {
			t.Log(err)
			continue
		}
		t.Log(st)
	}
}

// checkModel checks the fake model's records: per-session order, and
// never two requests of one session in flight; for the first chats out of
// order it logs the requests around the first problem.
func checkModel(t *testing.T, rm *replicaModel, model *openaitest.Server, window map[int]bool) {
	t.Helper()
	order := rm.checkOrder()
	problems(t, "order problems at the model", inWindow(t, "order problems at the model", order, window))
	described := map[int]bool{}
	for _, p := range order {
		var chat, n int
		if _, err := fmt.Sscanf(p, "chat c%d request r%d", &chat, &n); err != nil || described[chat] || len(described) == 3 {
			continue
		}
		described[chat] = true
		t.Log(rm.describe(chat, n))
	}
	var overlaps []string
	for key, st := range model.KeyStats() {
		if st.MaxInFlight > 1 {
			for _, o := range st.Overlaps {
				overlaps = append(overlaps, fmt.Sprintf("%s at %s: %s while %v", key, o.At.Format("15:04:05.000"), o.Path, o.Others))
			}
		}
	}
	slices.Sort(overlaps)
	problems(t, "model requests of one session while another was in flight", overlaps)
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// replicaTraffic sends replicaMsg texts to the test chats in turn, one
// every replicaInterval, until stop.
type replicaTraffic struct {
	begin time.Time
	done  chan struct{}
	quit  chan struct{}

	mu       sync.Mutex
	sentPer  []int                // guarded by mu
	queuedAt map[string]time.Time // guarded by mu
	updates  map[string]int       // input -> update id; guarded by mu
}

func startReplicaTraffic(tg *telegramtest.Server) *replicaTraffic {
	tr := &replicaTraffic{begin: time.Now(), done: make(chan struct{}), quit: make(chan struct{}),
		sentPer: make([]int, replicaChats), queuedAt: map[string]time.Time{}, updates: map[string]int{}}
	go func() {
		defer close(tr.done)
		tick := time.NewTicker(replicaInterval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-tr.quit:
				return
			case <-tick.C:
			}
			c := i % replicaChats
			tr.mu.Lock()
			tr.sentPer[c]++
			text := replicaMsg(c, tr.sentPer[c])
			tr.queuedAt[text] = time.Now()
			tr.mu.Unlock()
			id := tg.DM(replicaChatID(c), text)
			tr.mu.Lock()
			tr.updates[text] = id
			tr.mu.Unlock()
		}
	}()
	return tr
}

// deliveries describes how the balancer delivered the inputs that
// problems name (at most n): which replica got each attempt, when, and
// how it ended.
func (tr *replicaTraffic) deliveries(bal *telegramtest.Balancer, problems []string, n int) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	byUpdate := map[int][]telegramtest.Attempt{}
	for _, a := range bal.Attempts() {
		byUpdate[a.UpdateID] = append(byUpdate[a.UpdateID], a)
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range problems {
		for _, m := range replicaMsgRE.FindAllString(p, -1) {
			if seen[m] || len(out) == n {
				continue
			}
			seen[m] = true
			id := tr.updates[m]
			var as []string
			for _, a := range byUpdate[id] {
				res := "200"
				if a.Err != "" {
					res = a.Err
				}
				as = append(as, fmt.Sprintf("r%d at %s took %s: %s", a.Target+1, a.Start.Format("15:04:05.000"), a.Took.Round(time.Millisecond), res))
			}
			out = append(out, fmt.Sprintf("%s (update %d, queued %s): %s", m, id, tr.queuedAt[m].Format("15:04:05.000"), strings.Join(as, "; ")))
		}
	}
	return out
}

// stop ends the traffic and returns how many messages each chat sent and
// when each was queued.
func (tr *replicaTraffic) stop() ([]int, map[string]time.Time) {
	close(tr.quit)
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.sentPer), tr.queuedAt
}

// logLatency logs the time from queueing an input to its first reply:
// the median, p99 and max of the run, and the max of the inputs queued in
// the 5 s around each fault (the take-over shows there).
func logLatency(t *testing.T, lat map[string]time.Duration, queuedAt map[string]time.Time, faults map[string]time.Time) {
	t.Helper()
	var all []time.Duration
	for _, d := range lat {
		all = append(all, d)
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	line := fmt.Sprintf("queued to first reply: median %s, p99 %s, max %s", r(all[len(all)/2]), r(all[len(all)*99/100]), r(all[len(all)-1]))
	for name, at := range faults {
		var worst time.Duration
		for in, d := range lat {
			if q := queuedAt[in]; q.After(at.Add(-5*time.Second)) && q.Before(at.Add(5*time.Second)) {
				worst = max(worst, d)
			}
		}
		line += fmt.Sprintf("; around the %s: max %s", name, r(worst))
	}
	t.Log(line)
}
