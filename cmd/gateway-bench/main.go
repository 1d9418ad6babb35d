package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

type options struct {
	gateway  string
	mode     string
	n        int
	chats    int
	rate     int
	duration time.Duration
	timeout  time.Duration
	keep     bool
	// streaming is the Telegram account's streaming.mode; think how long
	// the fake model takes per call; tools how many calls of a built-in
	// tool it makes in a turn before answering (benchReply).
	streaming string
	think     time.Duration
	tools     int
	// webrounds: rounds of n new web chats, concurrency in flight.
	rounds, concurrency int
	// postgres, when set, is an admin URL: the daemon runs on the
	// postgres storage backend in a fresh database made on that server.
	postgres string
	// sqlite runs the daemon on the sqlite backend.
	sqlite bool
	// replicas, when above 0, runs that many daemons on the postgres
	// database, Telegram in webhook mode, updates posted round robin.
	replicas int
	// byChat (-spread chat) sends each chat's updates to one replica
	// instead of round robin.
	byChat bool
	// roundTrips puts the round-trip counting proxy (dbProxy) between
	// the daemons and the database.
	roundTrips bool
	// runs is how many take-overs -mode takeover measures; signal is
	// what it does to the replica in a turn: kill or stop.
	runs   int
	signal string
	// maxConcurrent is each daemon's agents.defaults.maxConcurrent.
	maxConcurrent int
	// floor runs the floor bot (floorbot.go) in place of the gateway;
	// floorContext makes it the context floor (floorcontext.go), asking
	// the model what the gateway asks, from the template in contextFile
	// (captured from the gateway when "").
	floor        bool
	floorContext bool
	contextFile  string
}

func main() {
	if isFloorChild() { // the -floor child: see daemonSpec.command
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := floorMain(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	var o options
	flag.StringVar(&o.gateway, "gateway", "", "path to the built gateway binary (required)")
	flag.StringVar(&o.mode, "mode", "burst", "burst, sustained, webrounds, takeover (-postgres: SIGKILL a replica mid-turn, time until another answers), restart (SIGKILL the daemon under traffic and start it again, -runs times: time until it polls again) or compare (-runs rounds of a burst of the floor, files and, with -postgres, postgres, one after the other: the ratios of issue 21, their medians)")
	flag.IntVar(&o.rounds, "rounds", 10, "webrounds: rounds of new web chats")
	flag.IntVar(&o.concurrency, "concurrency", 200, "webrounds: chats in flight")
	flag.IntVar(&o.n, "n", 1000, "burst: number of messages")
	flag.IntVar(&o.chats, "chats", 100, "number of chats the messages are spread over")
	flag.IntVar(&o.rate, "rate", 200, "sustained: messages per second")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "sustained: how long to send")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long to wait for the last reply")
	flag.BoolVar(&o.keep, "keep", false, "keep the state directory")
	flag.DurationVar(&o.think, "think", 0, "how long the fake model takes per call (turns past 1 s show a progress status)")
	flag.IntVar(&o.tools, "tools", 0, "tool calls (sessions_list) the fake model makes in each turn before its answer, one per model call: a progress status is edited between them")
	flag.StringVar(&o.streaming, "streaming", "off", "streaming.mode of the Telegram account: off, progress or partial")
	flag.StringVar(&o.postgres, "postgres", "", "run the daemon on the postgres backend: URL of a role that may create databases (a fresh one per run)")
	flag.BoolVar(&o.sqlite, "sqlite", false, "run the daemon on the sqlite backend (stateDir/gateway.sqlite)")
	flag.IntVar(&o.replicas, "replicas", 0, "run this many replicas on the -postgres database (Telegram in webhook mode, updates round robin); 0: one daemon polling")
	flag.BoolVar(&o.roundTrips, "roundtrips", false, "count database round trips per message (a counting proxy between the daemons and -postgres)")
	flag.IntVar(&o.runs, "runs", 5, "takeover: how many take-overs to measure; restart: how many restarts; compare: how many rounds")
	flag.IntVar(&o.maxConcurrent, "max-concurrent", 8, "agents.defaults.maxConcurrent of each daemon: the turns it runs at once")
	flag.BoolVar(&o.floor, "floor", false, "run the floor instead of the gateway: a bot that keeps nothing (no disk, no history) on the same fakes, measured the same way (burst or sustained; no -gateway)")
	flag.BoolVar(&o.floorContext, "floor-context", false, "with -floor: the context floor, asking the model what the gateway asks (its system messages, tools and options, captured from -gateway; each chat's history kept in memory)")
	spread := flag.String("spread", "roundrobin", "replicas: how updates are spread over them, roundrobin or chat (each chat's to one replica)")
	flag.StringVar(&o.signal, "signal", "kill", "takeover: kill (SIGKILL) or stop (SIGSTOP) the replica in its turn; restart: kill (SIGKILL) or term (SIGTERM, a clean stop)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the fakes and the load, not the daemon) to this file")
	flag.Parse()
	o.byChat = *spread == "chat"
	modes := map[string]bool{"burst": true, "sustained": true, "webrounds": true, "takeover": true, "restart": true, "compare": true}
	needPG := o.replicas > 0 || o.roundTrips || o.mode == "takeover"
	floorOK := !o.floor || (o.mode != "webrounds" && o.mode != "takeover" && o.mode != "restart" && o.postgres == "" && !o.sqlite && o.replicas == 0 && o.tools == 0 && o.streaming == "off")
	if err := errors.Join(restartFlags(o), compareFlags(o), floorContextFlags(o)); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-bench:", err)
		os.Exit(2)
	}
	if (o.gateway == "" && !o.floor) || !floorOK || !modes[o.mode] || o.chats < 1 || o.replicas < 0 || o.tools < 0 || (needPG && o.postgres == "") || (o.sqlite && o.postgres != "") ||
		(o.signal != "kill" && o.signal != "stop" && o.signal != "term") || (*spread != "roundrobin" && *spread != "chat") {
		flag.Usage()
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gateway-bench: cpuprofile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "gateway-bench:", err)
		os.Exit(1)
	}
}

// spread is the -spread value of o.
func (o options) spread() string {
	if o.byChat {
		return "chat"
	}
	return "roundrobin"
}

func listen() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	return ln, ln.Addr().String(), nil
}

// summary is what compare (compare.go) takes from a burst run: its
// throughput and the CPU a message cost the daemons and this process.
type summary struct {
	throughput, cpuPerMsg, harnessPerMsg float64
}

func run(ctx context.Context, o options) error {
	switch o.mode {
	case "takeover":
		return takeover(ctx, o)
	case "restart":
		return restartBench(ctx, o)
	case "compare":
		return compare(ctx, o)
	}
	_, err := runTraffic(ctx, o)
	return err
}

// runTraffic runs one burst, sustained or webrounds run and prints its
// report.
func runTraffic(ctx context.Context, o options) (sum summary, err error) {
	res := newResults()
	var drafts atomic.Int64 // status/draft posts: sendMessage without an answer
	tg := telegramtest.NewServer(telegramtest.Options{OnSent: func(m telegramtest.Sent, at time.Time) {
		if m.Method != "sendMessage" {
			return
		}
		if !strings.Contains(m.Text, "ack ") {
			drafts.Add(1)
		}
		res.onReply(m.ChatID, m.Text, at)
	}})
	defer tg.Close()
	model := openaitest.New()
	defer model.Close()
	model.Forget() // a long run must not grow the fake's heap (and its GC on the daemon's cores)
	model.SetReply(benchReply(o.think, o.tools))

	dir, err := os.MkdirTemp("", "gateway-bench-")
	if err != nil {
		return sum, fmt.Errorf("state dir: %w", err)
	}
	defer func() {
		if !o.keep && err == nil { // a failed run keeps its logs
			os.RemoveAll(dir)
		}
	}()
	if o.floorContext && o.floor && o.contextFile == "" {
		if o.contextFile, err = captureContext(ctx, o, dir); err != nil {
			return sum, err
		}
	}
	db, err := openBenchDB(ctx, o)
	if err != nil {
		return sum, err
	}
	defer db.Close()
	daemons, startup, err := startDaemons(ctx, o, dir, tg, model.BaseURL(), db.daemonURL)
	for _, d := range daemons {
		defer d.Stop()
	}
	if err != nil {
		return sum, err
	}
	stopAll := func() {
		for _, d := range daemons {
			d.Stop()
		}
	}
	if o.mode == "webrounds" {
		fmt.Printf("start_to_ready=%s\n", startup.Round(time.Millisecond))
		err := webRounds(ctx, "http://"+daemons[0].httpAddr, o.rounds, o.n, o.concurrency)
		fmt.Printf("peak_rss=%.1f MB\n", float64(peakRSS(daemons[0].Pid()))/1024)
		return sum, err
	}

	journalCounters := []string{"gateway_journal_lines_total", "gateway_journal_fsyncs_total"}
	countersBefore := scrapeAll(daemons, journalCounters...)
	opsBefore := scrapeOps(daemons)
	cpuBefore := cpuAll(daemons)
	harnessBefore := cpuTime(os.Getpid())
	tripsBefore := db.RoundTrips()
	var serverBefore map[int]procCPU
	if db.url != "" {
		serverBefore = serverProcs(ctx, db.url)
	}
	sendStart := time.Now()
	total, avail, webhook, err := sendTraffic(ctx, o, res, tg, daemons)
	if webhook != nil {
		defer webhook.Close()
	}
	if err != nil {
		return sum, err
	}
	sendEnd := time.Now()
	deadline := time.Now().Add(o.timeout)
	for res.count() < total && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	lastReply := res.last()
	cpuUsed := cpuAll(daemons) - cpuBefore
	harnessUsed := cpuTime(os.Getpid()) - harnessBefore
	tripsAfter := db.RoundTrips()
	countersAfter := scrapeAll(daemons, journalCounters...)
	time.Sleep(300 * time.Millisecond) // let late duplicates arrive
	opsAfter := scrapeOps(daemons)     // after the last replies' marks
	var rss int64
	for _, d := range daemons {
		rss = max(rss, peakRSS(d.Pid()))
	}

	lat, lost, dups := res.latencies(avail, total)
	elapsed := lastReply.Sub(sendStart)
	backend := "files"
	switch {
	case o.floor && o.floorContext:
		backend = "floor-context"
	case o.floor:
		backend = "floor"
	case o.postgres != "":
		backend = "postgres"
	case o.sqlite:
		backend = "sqlite"
	}
	fmt.Printf("mode=%s backend=%s replicas=%d messages=%d chats=%d max_concurrent=%d think=%s\n", o.mode, backend, len(daemons), total, o.chats, o.maxConcurrent, o.think)
	if o.replicas > 0 {
		fmt.Printf("spread=%s\n", o.spread())
	}
	fmt.Printf("start_to_ready=%s\n", startup.Round(time.Millisecond))
	if o.mode == "burst" {
		fmt.Printf("drain_time=%s throughput=%.0f msgs/s\n", elapsed.Round(time.Millisecond), float64(total-lost)/elapsed.Seconds())
	} else {
		fmt.Printf("send_rate=%.0f msgs/s achieved_throughput=%.0f msgs/s\n",
			float64(total)/sendEnd.Sub(sendStart).Seconds(), float64(total-lost)/elapsed.Seconds())
	}
	fmt.Printf("latency p50=%s p90=%s p99=%s max=%s\n", pct(lat, 50), pct(lat, 90), pct(lat, 99), pct(lat, 100))
	fmt.Printf("peak_rss=%.1f MB (largest replica)\n", float64(rss)/1024)
	sum = summary{throughput: float64(total-lost) / elapsed.Seconds(),
		cpuPerMsg:     float64(cpuUsed.Microseconds()) / 1000 / float64(max(total, 1)),
		harnessPerMsg: float64(harnessUsed.Microseconds()) / 1000 / float64(max(total, 1))}
	fmt.Printf("cpu=%s cpu_per_msg=%.3f ms (all replicas)\n", cpuUsed, sum.cpuPerMsg)
	fmt.Printf("harness_cpu_per_msg=%.3f ms (this process: the fakes and the load, on the same cores)\n", sum.harnessPerMsg)
	fmt.Printf("journal_lines_per_msg=%s journal_fsyncs_per_msg=%s\n",
		perMessage(countersBefore, countersAfter, journalCounters[0], total),
		perMessage(countersBefore, countersAfter, journalCounters[1], total))
	fmt.Printf("streaming=%s tools_per_turn=%d model_calls=%d draft_posts=%d draft_edits=%d draft_deletes=%d\n", o.streaming,
		o.tools, model.Calls(), drafts.Load(), tg.Calls("editMessageText"), tg.Calls("deleteMessage"))
	// What the fake Bot API served: a harness that costs one run more than
	// another (fakes and daemon share the cores) shows it here first.
	fmt.Printf("telegram_calls getUpdates=%d sendMessage=%d sendChatAction=%d\n",
		tg.Calls("getUpdates"), tg.Calls("sendMessage"), tg.Calls("sendChatAction"))
	if webhook != nil {
		fmt.Printf("webhook_retries=%d webhook_failed=%d\n", webhook.retries.Load(), webhook.failed.Load())
	}
	if db.proxy != nil {
		fmt.Printf("db_round_trips_per_msg=%s (%d during the run, every replica)\n",
			roundTripsPerMessage(tripsBefore, tripsAfter, total), tripsAfter-tripsBefore)
	}
	if s := storagePerMessage(opsBefore, opsAfter, total); s != "" {
		fmt.Println(s)
	}
	if db.url != "" {
		var st pgStats
		st.run, st.cpu = serverCPU(serverBefore, serverProcs(ctx, db.url))
		stopAll()
		var err error
		if st.commits, st.rows, err = dbCounters(ctx, db.url); err != nil {
			fmt.Printf("db stats: %v\n", err)
		} else {
			fmt.Println(st.perMessage(total))
		}
	}
	fmt.Printf("lost=%d duplicated=%d\n", lost, dups)
	if lost > 0 || dups > 0 {
		fmt.Println(res.misses(total, o.chats, 5))
	}
	if lost > 0 || dups > 0 {
		return sum, fmt.Errorf("%d lost, %d duplicated replies (logs: %s)", lost, dups, dir)
	}
	return sum, nil
}

// startDaemons starts the run's gateway processes (one, or -replicas of
// them on one database) and waits until all are ready; startup is the
// slowest start to ready. The daemons are returned even on error, to be
// stopped.
func startDaemons(ctx context.Context, o options, dir string, tg *telegramtest.Server, modelURL, dbURL string) ([]*daemon, time.Duration, error) {
	n := max(o.replicas, 1)
	var daemons []*daemon
	for i := range n {
		addr, err := freeAddr()
		if err != nil {
			return daemons, 0, fmt.Errorf("pick the http address: %w", err)
		}
		spec := daemonSpec{dir: dir, httpAddr: addr, tg: tg, modelURL: modelURL, streaming: o.streaming, dbURL: dbURL,
			maxConcurrent: o.maxConcurrent, sqlite: o.sqlite, floor: o.floor}
		if o.floor && o.floorContext {
			spec.floorContext = o.contextFile
		}
		name := "gateway"
		if o.replicas > 0 {
			name = fmt.Sprintf("replica-%d", i+1)
			spec.dir, spec.replicaID = filepath.Join(dir, name), name
		}
		d, err := startDaemon(o.gateway, name, spec)
		if err != nil {
			return daemons, 0, err
		}
		daemons = append(daemons, d)
	}
	var startup time.Duration
	for _, d := range daemons {
		s, err := d.Ready(ctx)
		if err != nil {
			return daemons, 0, err
		}
		startup = max(startup, s)
	}
	return daemons, startup, nil
}

// cpuAll is the CPU the daemons used so far.
func cpuAll(daemons []*daemon) time.Duration {
	var sum time.Duration
	for _, d := range daemons {
		sum += cpuTime(d.Pid())
	}
	return sum
}

// scrapeAll sums the named counters over the daemons' /metrics; a counter
// one of them lacks is missing.
func scrapeAll(daemons []*daemon, names ...string) map[string]float64 {
	sum := map[string]float64{}
	for i, d := range daemons {
		got := scrape("http://"+d.httpAddr, names...)
		for _, n := range names {
			v, ok := got[n]
			_, had := sum[n]
			switch {
			case ok && (i == 0 || had):
				sum[n] += v
			default:
				delete(sum, n)
			}
		}
	}
	return sum
}

func waitReady(ctx context.Context, url string, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("gateway not ready after %s", limit)
}

// peakRSS reads VmHWM (kB) of pid.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				return v
			}
		}
	}
	return 0
}

type results struct {
	mu      sync.Mutex
	got     map[int][]time.Time
	n       int
	lastAt  time.Time
	sentIdx map[int]bool
}

func newResults() *results {
	return &results{got: map[int][]time.Time{}, sentIdx: map[int]bool{}}
}

func (r *results) sent(i int) {
	r.mu.Lock()
	r.sentIdx[i] = true
	r.mu.Unlock()
}

func (r *results) onReply(chat int64, text string, at time.Time) {
	i := strings.Index(text, "ack m")
	if i < 0 {
		return
	}
	s := text[i+len("ack m"):]
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	idx, err := strconv.Atoi(s[:j])
	if err != nil {
		return
	}
	r.mu.Lock()
	if len(r.got[idx]) == 0 {
		r.n++
	}
	r.got[idx] = append(r.got[idx], at)
	if at.After(r.lastAt) {
		r.lastAt = at
	}
	r.mu.Unlock()
}

func (r *results) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *results) last() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastAt
}

// latencies pairs message i (update i+1) with its first reply.
func (r *results) latencies(avail []time.Time, total int) (lat []time.Duration, lost, dups int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < total; i++ {
		ts := r.got[i]
		if len(ts) == 0 {
			lost++
			continue
		}
		if len(ts) > 1 {
			dups += len(ts) - 1
		}
		if i < len(avail) {
			lat = append(lat, ts[0].Sub(avail[i]))
		}
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return lat, lost, dups
}

// firstCopies returns when the first copy of each message answered more
// than once reached the fake.
func (r *results) firstCopies(total int) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for i := 0; i < total; i++ {
		if ts := r.got[i]; len(ts) > 1 {
			out = append(out, ts[0])
		}
	}
	return out
}

// misses names up to limit lost and duplicated messages with their chats
// (message i is in chat i mod chats), to tell a lost message from one
// answered with another's reply.
func (r *results) misses(total, chats, limit int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lost, dup []string
	for i := 0; i < total; i++ {
		switch n := len(r.got[i]); {
		case n == 0 && len(lost) < limit:
			lost = append(lost, fmt.Sprintf("m%d/chat %d", i, i%chats))
		case n > 1 && len(dup) < limit:
			dup = append(dup, fmt.Sprintf("m%d/chat %d ×%d", i, i%chats, n))
		}
	}
	return fmt.Sprintf("first lost: %s; first duplicated: %s", strings.Join(lost, ", "), strings.Join(dup, ", "))
}

func pct(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	i := (len(lat)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	if i > len(lat) {
		i = len(lat)
	}
	return lat[i-1].Round(10 * time.Microsecond)
}
