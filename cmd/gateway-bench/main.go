package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
	// the fake model takes per answer.
	streaming string
	think     time.Duration
	// webrounds: rounds of n new web chats, concurrency in flight.
	rounds, concurrency int
	// postgres, when set, is an admin URL: the daemon runs on the
	// postgres storage backend in a fresh database made on that server.
	postgres string
}

func main() {
	var o options
	flag.StringVar(&o.gateway, "gateway", "", "path to the built gateway binary (required)")
	flag.StringVar(&o.mode, "mode", "burst", "burst, sustained or webrounds")
	flag.IntVar(&o.rounds, "rounds", 10, "webrounds: rounds of new web chats")
	flag.IntVar(&o.concurrency, "concurrency", 200, "webrounds: chats in flight")
	flag.IntVar(&o.n, "n", 1000, "burst: number of messages")
	flag.IntVar(&o.chats, "chats", 100, "number of chats the messages are spread over")
	flag.IntVar(&o.rate, "rate", 200, "sustained: messages per second")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "sustained: how long to send")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long to wait for the last reply")
	flag.BoolVar(&o.keep, "keep", false, "keep the state directory")
	flag.DurationVar(&o.think, "think", 0, "how long the fake model takes per answer (turns past 1 s show a progress status)")
	flag.StringVar(&o.streaming, "streaming", "off", "streaming.mode of the Telegram account: off, progress or partial")
	flag.StringVar(&o.postgres, "postgres", "", "run the daemon on the postgres backend: URL of a role that may create databases (a fresh one per run)")
	flag.Parse()
	if o.gateway == "" || (o.mode != "burst" && o.mode != "sustained" && o.mode != "webrounds") || o.chats < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-bench:", err)
		os.Exit(1)
	}
}

func listen() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	return ln, ln.Addr().String(), nil
}

func run(ctx context.Context, o options) error {
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
	model.SetReply(func(_ int, r openaitest.Request) openaitest.Reply {
		// The whole answer in one delta: a streamed draft never shows a
		// prefix of it that would parse as another message's reply.
		return openaitest.Reply{Text: "ack " + r.LastUserText(), Deltas: 1, Delay: o.think}
	})
	httpLn, httpAddr, err := listen()
	if err != nil {
		return fmt.Errorf("pick the http address: %w", err)
	}
	httpLn.Close()

	dir, err := os.MkdirTemp("", "gateway-bench-")
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	cfg, dbURL, drop, err := benchConfig(ctx, o, dir, httpAddr, tg, model)
	if err != nil {
		return err
	}
	defer drop()
	cfgPath := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	logf, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		return fmt.Errorf("gateway log: %w", err)
	}
	defer logf.Close()

	start := time.Now()
	cmd := exec.Command(o.gateway, "run", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start gateway: %w", err)
	}
	stopDaemon := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	defer stopDaemon()
	ready, err := waitReady(ctx, "http://"+httpAddr+"/readyz", 30*time.Second)
	if err != nil {
		return err
	}
	startup := ready.Sub(start)
	if o.mode == "webrounds" {
		fmt.Printf("start_to_ready=%s\n", startup.Round(time.Millisecond))
		err := webRounds(ctx, "http://"+httpAddr, o.rounds, o.n, o.concurrency)
		fmt.Printf("peak_rss=%.1f MB\n", float64(peakRSS(cmd.Process.Pid))/1024)
		return err
	}

	journalCounters := []string{"gateway_journal_lines_total", "gateway_journal_fsyncs_total"}
	countersBefore := scrape("http://"+httpAddr, journalCounters...)
	cpuBefore := cpuTime(cmd.Process.Pid)
	sendStart := time.Now()
	total, avail, err := sendTraffic(ctx, o, res, tg)
	if err != nil {
		return err
	}
	sendEnd := time.Now()
	deadline := time.Now().Add(o.timeout)
	for res.count() < total && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	lastReply := res.last()
	cpuUsed := cpuTime(cmd.Process.Pid) - cpuBefore
	countersAfter := scrape("http://"+httpAddr, journalCounters...)
	time.Sleep(300 * time.Millisecond) // let late duplicates arrive
	rss := peakRSS(cmd.Process.Pid)

	lat, lost, dups := res.latencies(avail, total)
	elapsed := lastReply.Sub(sendStart)
	backend := "files"
	if o.postgres != "" {
		backend = "postgres"
	}
	fmt.Printf("mode=%s backend=%s messages=%d chats=%d\n", o.mode, backend, total, o.chats)
	fmt.Printf("start_to_ready=%s\n", startup.Round(time.Millisecond))
	if o.mode == "burst" {
		fmt.Printf("drain_time=%s throughput=%.0f msgs/s\n", elapsed.Round(time.Millisecond), float64(total-lost)/elapsed.Seconds())
	} else {
		fmt.Printf("send_rate=%.0f msgs/s achieved_throughput=%.0f msgs/s\n",
			float64(total)/sendEnd.Sub(sendStart).Seconds(), float64(total-lost)/elapsed.Seconds())
	}
	fmt.Printf("latency p50=%s p90=%s p99=%s max=%s\n", pct(lat, 50), pct(lat, 90), pct(lat, 99), pct(lat, 100))
	fmt.Printf("peak_rss=%.1f MB\n", float64(rss)/1024)
	fmt.Printf("cpu=%s cpu_per_msg=%.3f ms\n", cpuUsed, float64(cpuUsed.Microseconds())/1000/float64(max(total, 1)))
	fmt.Printf("journal_lines_per_msg=%s journal_fsyncs_per_msg=%s\n",
		perMessage(countersBefore, countersAfter, journalCounters[0], total),
		perMessage(countersBefore, countersAfter, journalCounters[1], total))
	fmt.Printf("streaming=%s draft_posts=%d draft_edits=%d draft_deletes=%d\n", o.streaming, drafts.Load(),
		tg.Calls("editMessageText"), tg.Calls("deleteMessage"))
	if dbURL != "" {
		st := pgStats{cpu: serverCPU(ctx, dbURL)}
		stopDaemon()
		var err error
		if st.commits, st.rows, err = dbCounters(ctx, dbURL); err != nil {
			fmt.Printf("db stats: %v\n", err)
		} else {
			fmt.Println(st.perMessage(total))
		}
	}
	fmt.Printf("lost=%d duplicated=%d\n", lost, dups)
	if lost > 0 || dups > 0 {
		return fmt.Errorf("%d lost, %d duplicated replies (log: %s)", lost, dups, logf.Name())
	}
	return nil
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

// benchConfig is the daemon's YAML for a run: the fake Telegram and model,
// the state under dir, and with --postgres a fresh database (drop removes
// it; dbURL is "" on the files backend).
func benchConfig(ctx context.Context, o options, dir, httpAddr string, tg *telegramtest.Server, model *openaitest.Server) (cfg, dbURL string, drop func(), err error) {
	cfg = fmt.Sprintf(`stateDir: %s
http: {listen: "%s"}
log: {level: warn, format: json}
channels:
  telegram:
    accounts:
      default:
        token: "%s"
        apiRoot: "%s"
        dmPolicy: open
        allowFrom: ["*"]
        streaming: {mode: %s}
providers:
  fake: {type: openai, baseURL: "%s", apiKey: "bench"}
agents:
  defaults: {model: fake/bench, maxConcurrent: 8}
  list: [{id: main}]
messages:
  queue: {mode: followup, cap: 1000}
  inbound: {byChannel: {telegram: {}}}   # one reply per message: no burst assembly
`, filepath.Join(dir, "state"), httpAddr, tg.Token(), tg.URL, o.streaming, model.BaseURL())
	drop = func() {}
	if o.postgres != "" {
		dbURL, drop, err = benchDatabase(ctx, o.postgres, o.keep)
		if err != nil {
			return "", "", nil, err
		}
		cfg += fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q}}\n", dbURL)
	}
	return cfg, dbURL, drop, nil
}

// sendTraffic injects the run's messages (all at once for burst, at the
// rate for sustained) and returns how many and when each became
// available to the bot.
func sendTraffic(ctx context.Context, o options, res *results, tg *telegramtest.Server) (int, []time.Time, error) {
	var total int
	var avail []time.Time // when message i became available to the bot
	inject := func(i int) {
		res.sent(i)
		tg.DM(int64(10000+i%o.chats), "m"+strconv.Itoa(i))
		avail = append(avail, time.Now())
	}
	switch o.mode {
	case "burst":
		total = o.n
		for i := 0; i < o.n; i++ {
			inject(i)
		}
	case "sustained":
		total = int(float64(o.rate) * o.duration.Seconds())
		interval := time.Second / time.Duration(o.rate)
		next := time.Now()
		for i := 0; i < total; i++ {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(interval)
			inject(i)
			if ctx.Err() != nil {
				return i + 1, avail, ctx.Err()
			}
		}
	}
	return total, avail, nil
}
