package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// The crash test's traffic: chats spread over the four queue modes, about
// rate messages a second, one in longEvery asking for a reply long enough
// for three Telegram messages.
const (
	crashChats     = 20
	crashRate      = 50
	crashLongEvery = 7
	crashLongLines = 110 // × ~85 characters: three chunks of at most 4096
)

var markerRE = regexp.MustCompile(`m\d+`)

// crashModel answers every request after 20–150 ms with lines naming the
// markers of the user messages since the last assistant message: each line
// is unique, so the fake Telegram's record tells which input a delivered
// chunk answers and whether it was delivered twice.
func crashModel(n int, r openaitest.Request) openaitest.Reply {
	var markers []string
	long := false
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		m := r.Body.Messages[i]
		if m.Role == goopenai.ChatMessageRoleAssistant {
			break
		}
		if m.Role != goopenai.ChatMessageRoleUser {
			continue
		}
		text := m.Content
		for _, p := range m.MultiContent {
			text += p.Text
		}
		markers = append(markers, markerRE.FindAllString(text, -1)...)
		long = long || strings.Contains(text, "long")
	}
	slices.Sort(markers)
	markers = slices.Compact(markers)
	lines := 1
	if long {
		lines = crashLongLines
	}
	var b strings.Builder
	head := "[" + strings.Join(markers, " ") + "]"
	for k := range lines {
		fmt.Fprintf(&b, "%s line %03d %s\n", head, k, strings.Repeat("x", 60))
	}
	hold := make(chan struct{})
	time.AfterFunc(time.Duration(20+rand.IntN(130))*time.Millisecond, func() { close(hold) })
	return openaitest.Reply{Text: strings.TrimRight(b.String(), "\n"), Hold: hold}
}

// crashDaemon is the built gateway run as a child process on one state dir.
type crashDaemon struct {
	t    *testing.T
	cfg  string
	addr string
	logs string
	// config, if set, is the config file's text for an API root; start
	// writes it with the fake Telegram's root tagged by the run (runVia),
	// so the fake's record tells which run sent each message.
	config  func(apiRoot string) string
	tg      *telegramtest.Server
	cmd     *exec.Cmd
	runs    int
	readies []time.Duration
}

// runVia is the fake Telegram's via tag of a daemon's run n: what run n
// sends is recorded with Sent.Via = runVia(n).
func runVia(n int) string { return "run" + strconv.Itoa(n) }

func (d *crashDaemon) start() {
	d.t.Helper()
	d.runs++
	if d.config != nil {
		if err := os.WriteFile(d.cfg, []byte(d.config(d.tg.Via(runVia(d.runs)))), 0o600); err != nil {
			d.t.Fatal(err)
		}
	}
	logf, err := os.Create(filepath.Join(d.logs, fmt.Sprintf("run-%03d.log", d.runs)))
	if err != nil {
		d.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(gatewayBin, "run", "--config", d.cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+d.logs)
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd = cmd
	client := &http.Client{Timeout: time.Second}
	// Ready takes 2-4 s here, 10 s on a loaded machine (PostgreSQL
	// start-up work included): the cap only bounds a daemon that never
	// gets ready.
	for deadline := time.Now().Add(crashReadyCap); ; {
		res, err := client.Get("http://" + d.addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("restart %d not ready after %s (log %s)", d.runs, crashReadyCap, logf.Name())
		}
		time.Sleep(time.Millisecond)
	}
	d.readies = append(d.readies, time.Since(begin))
}

func (d *crashDaemon) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	_ = d.cmd.Wait()
}

func (d *crashDaemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		d.kill()
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func crashSeed(t *testing.T) uint64 {
	if s := os.Getenv("GATEWAY_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GATEWAY_CRASH_SEED: %v", err)
		}
		return v
	}
	if os.Getenv("CI") == "true" {
		return 20261125
	}
	return rand.Uint64()
}

// TestCrashLosesNothingRepeatsNothing runs the built daemon against the
// fake Telegram Bot API and a fake model under steady traffic in all four
// queue modes, with replies of one and of three Telegram messages, and
// SIGKILLs it at random moments (at least 50 times), restarting it on the
// same state dir each time. Counted from the fake's own record of what the
// bot sent: no input goes unanswered, no reply chunk is delivered twice
// beyond the documented window (the instant between Telegram accepting a
// chunk and the write of its mark), and each transcript holds one reply
// per input. GATEWAY_CRASH_KILLS raises the number of kills,
// GATEWAY_CRASH_SEED replays a run.
func TestCrashLosesNothingRepeatsNothing(t *testing.T) {
	runCrash(t, crashBackend{
		checkTranscripts: func(t *testing.T, _, state string) {
			checkCrashTranscripts(t, filepath.Join(state, "agents", "main", "sessions"))
		},
	})
}

// crashBackend is what the crash run needs of a storage backend.
type crashBackend struct {
	// storage is the YAML storage block ("" for the files default).
	storage string
	// checkTranscripts checks the transcripts once the daemon stopped,
	// given its config file and state dir.
	checkTranscripts func(t *testing.T, cfgPath, state string)
	// inFlight reports what the storage still holds undone, read while
	// the daemon runs: pending is 0 once no accepted record lacks an
	// outcome and no reply is partly delivered; detail describes the
	// journal records of the given ids. nil: the answers are awaited until
	// the cap alone.
	inFlight func(t *testing.T, records []string) (pending int, detail string)
}

// crashRun is one crash test's daemon, fakes and traffic.
type crashRun struct {
	d     *crashDaemon
	tg    *telegramtest.Server
	state string

	sent atomic.Int64
	mu   sync.Mutex
	long map[int]bool // guarded by mu
	// records[i] is the journal record id input m<i> gets when accepted;
	// guarded by mu.
	records []string
}

// runCrash is the crash test on backend b (see
// TestCrashLosesNothingRepeatsNothing).
func runCrash(t *testing.T, b crashBackend) {
	seed := crashSeed(t)
	t.Logf("seed %d (GATEWAY_CRASH_SEED=%d replays this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kills := 50
	if s := os.Getenv("GATEWAY_CRASH_KILLS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > kills {
			kills = v
		}
	}
	begin := time.Now()
	r := startCrashRun(t, b.storage)
	d, tg := r.d, r.tg
	d.start()
	defer d.stop()
	r.setModes()

	// Steady traffic from a goroutine while the daemon is killed and
	// restarted; Telegram keeps updates while it is down.
	stop := make(chan struct{})
	trafficDone := make(chan struct{})
	go func() {
		defer close(trafficDone)
		r.traffic(stop)
	}()
	for k := range kills {
		time.Sleep(time.Duration(150+rng.IntN(600)) * time.Millisecond)
		d.kill()
		// The next run starts once the fake has closed the dead one's
		// connections. Which run sent a message is told by its via tag,
		// not by when the fake recorded it: a request the dead process
		// wrote on a connection the fake had not yet accepted is handled
		// after that (CI runs 10 and 13 and stop 29's: a chunk so
		// recorded looked sent twice by one run).
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := tg.WaitNoConns(wctx); err != nil {
			t.Fatalf("kill %d: the fake still has open connections from the killed daemon: %v", k+1, err)
		}
		cancel()
		if k%10 == 9 {
			t.Logf("%d kills, %d messages sent", k+1, r.sent.Load())
		}
		d.start()
	}
	close(stop)
	<-trafficDone
	r.report(t, kills, b.inFlight)
	t.Logf("the crash run took %s", time.Since(begin).Round(time.Second))
	b.checkTranscripts(t, d.cfg, r.state)
}

// startCrashRun starts the fakes and writes the daemon's config (storage
// appended); the daemon is not started yet.
func startCrashRun(t *testing.T, storage string) *crashRun {
	t.Helper()
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	model.SetReply(crashModel)
	base := t.TempDir()
	if keep := os.Getenv("GATEWAY_CRASH_KEEP"); keep != "" {
		base = keep // state and logs stay for inspection
	}
	state := filepath.Join(base, "state")
	d := newCrashDaemon(t, base, state, tg, model, "{mode: collect, debounce: 50ms, cap: 50}", storage)
	return &crashRun{d: d, tg: tg, state: state, long: map[int]bool{}}
}

func crashChatID(c int) int64 { return int64(5000 + c) }

// setModes keeps chats 0-4 on collect and switches the others' sessions to
// followup, steer and interrupt, five chats each.
func (r *crashRun) setModes() {
	t, tg := r.d.t, r.tg
	t.Helper()
	modes := []string{"collect", "followup", "steer", "interrupt"}
	for c := 5; c < crashChats; c++ {
		tg.DM(crashChatID(c), "hello") // /queue needs the session to exist
		tg.DM(crashChatID(c), "/queue "+modes[c/5])
	}
	waitFor(t, 20*time.Second, "the /queue replies", func() bool {
		n := 0
		for _, s := range tg.Sent() {
			if strings.HasPrefix(s.Text, "Queue set:") {
				n++
			}
		}
		return n == crashChats-5
	})
}

// traffic sends crashRate messages a second over the chats until stop.
func (r *crashRun) traffic(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second / crashRate)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		text := fmt.Sprintf("msg m%d", i)
		r.mu.Lock()
		if i%crashLongEvery == 3 {
			text += " long"
			r.long[i] = true
		}
		r.mu.Unlock()
		chat := crashChatID(i % crashChats)
		_, msgID := r.tg.AddMessage(telegramtest.Message{ChatID: chat, FromID: chat, Text: text})
		r.mu.Lock()
		r.records = append(r.records, fmt.Sprintf("telegram:default:%d:%d", chat, msgID))
		r.mu.Unlock()
		r.sent.Add(1)
	}
}

// crashReadyCap bounds the wait for a restarted daemon's readiness.
const crashReadyCap = time.Minute

// crashSettleCap bounds the wait for the last run to answer everything;
// the wait ends earlier once the storage holds nothing in flight.
const crashSettleCap = 5 * time.Minute

// report waits for every input to be answered, stops the daemon and checks
// the fake's record. The wait ends when all are answered, when nothing is
// in flight (the fake Telegram holds no unacknowledged update and inFlight
// reports 0, twice a second apart, with
// inputs still unanswered: those are lost) or at crashSettleCap (still in
// flight: the last run is slow, not losing); the failure says which.
func (r *crashRun) report(t *testing.T, kills int, inFlight func(*testing.T, []string) (int, string)) {
	t.Helper()
	d, tg := r.d, r.tg
	total := int(r.sent.Load())
	var rep crashReport
	settled, drainedSince := time.Now(), time.Time{}
	pending, lastCheck := -1, time.Time{}
	deadline := time.Now().Add(crashSettleCap)
	if end, ok := t.Deadline(); ok && end.Add(-time.Minute).Before(deadline) {
		deadline = end.Add(-time.Minute) // room for the checks after it
	}
	capped := time.Until(deadline).Round(time.Second)
	for ; ; time.Sleep(20 * time.Millisecond) {
		if rep = countReplies(tg.Sent(), total); len(rep.unanswered) == 0 {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		if inFlight == nil || time.Since(lastCheck) < time.Second {
			continue
		}
		lastCheck = time.Now()
		unacked := tg.Pending()                                         // updates not yet journaled
		if pending, _ = inFlight(t, nil); pending != 0 || unacked > 0 { // -1: unknown
			drainedSince = time.Time{}
			continue
		}
		if drainedSince.IsZero() {
			drainedSince = time.Now()
		} else if time.Since(drainedSince) >= time.Second {
			break // nothing in flight, still unanswered: lost
		}
	}
	settle := time.Since(settled)
	detail := ""
	if len(rep.unanswered) > 0 && inFlight != nil {
		var ids []string
		r.mu.Lock()
		for _, i := range firstN(rep.unanswered, 20) {
			ids = append(ids, fmt.Sprintf("m%d=%s", i, r.records[i]))
		}
		r.mu.Unlock()
		pending, detail = inFlight(t, ids)
	}
	time.Sleep(500 * time.Millisecond) // late duplicates
	d.stop()
	rep = countReplies(tg.Sent(), total)
	outside := outsideWindow(tg.Sent())
	if late := lateFromDeadRuns(tg.Sent()); late > 0 {
		t.Logf("%d messages of a killed run were recorded after the next run had sent (requests on a connection the fake accepted late)", late)
	}

	slices.Sort(d.readies)
	r.mu.Lock()
	long := len(r.long)
	r.mu.Unlock()
	t.Logf("%d kills, %d messages (%d long), %d superseded in interrupt mode, %d chunks delivered, %d chunks twice (the documented window), restart to ready: median %s, max %s",
		kills, total, long, rep.superseded, rep.chunks, rep.dupChunks, d.readies[len(d.readies)/2].Round(time.Millisecond),
		d.readies[len(d.readies)-1].Round(time.Millisecond))
	t.Logf("the last run settled %s after the traffic stopped", settle.Round(time.Millisecond))
	if len(rep.unanswered) > 0 {
		why := fmt.Sprintf("still in flight after %s (%d records or replies undone: the last run is slow, nothing shown lost)", capped, pending)
		switch {
		case inFlight == nil:
			why = fmt.Sprintf("not answered within %s", capped)
		case tg.Pending() > 0:
			why = fmt.Sprintf("still in flight after %s (%d updates not yet taken from Telegram, %d records or replies undone)", capped, tg.Pending(), pending)
		case pending == 0 && len(rep.givenUp) == len(rep.unanswered):
			why = "all given up (nothing in flight in the storage)"
		case pending == 0:
			why = fmt.Sprintf("%d LOST: the storage holds nothing in flight (no pending record, no partly delivered reply)", len(rep.unanswered)-len(rep.givenUp))
		}
		t.Errorf("%d messages never answered, %s: %v; %d of them given up with a notice (the process died too often while their turn ran): %v\n%s",
			len(rep.unanswered), why, firstN(rep.unanswered, 20), len(rep.givenUp), firstN(rep.givenUp, 20), detail)
	}
	if len(outside) > 0 {
		t.Errorf("%d reply chunks delivered twice outside the documented window (the first copy was not the last thing its run sent to that chat before the kill): %v",
			len(outside), firstN(outside, 5))
	}
	if rep.dupChunks > kills/20 {
		// All in the window (checked above); at this rate the window is
		// about one per 20 kills: more says the window grew.
		t.Logf("note: %d chunks twice in %d kills is more than the expected 1 per 20 kills", rep.dupChunks, kills)
	}
}

// outsideWindow returns the duplicated chunks that the documented window
// does not explain: a chunk may reach the chat twice only if the process
// died right after delivering it, so its first copy is the last message
// its run sent to that chat, and the second copy comes from a later run.
// A message's run is its via tag (crashDaemon.start).
func outsideWindow(sent []telegramtest.Sent) []string {
	run := func(s telegramtest.Sent) int {
		n, err := strconv.Atoi(strings.TrimPrefix(s.Via, "run"))
		if err != nil {
			return -1 // not sent through a run's tag: never explained
		}
		return n
	}
	first := map[string]int{}
	var out []string
	for i, s := range sent {
		if s.Method != "sendMessage" || !strings.HasPrefix(s.Text, "[") {
			continue
		}
		key := strconv.FormatInt(s.ChatID, 10) + "|" + s.Text
		j, dup := first[key]
		if !dup {
			first[key] = i
			continue
		}
		ok := run(sent[j]) >= 0 && run(s) > run(sent[j])
		for k := j + 1; ok && k < len(sent); k++ {
			if sent[k].Via == sent[j].Via && sent[k].ChatID == s.ChatID && sent[k].Method == "sendMessage" {
				ok = false // the run went on sending to that chat: not a death right after j
			}
		}
		if !ok {
			out = append(out, fmt.Sprintf("chat %d message %d (first %d, runs %s and %s): %s", s.ChatID, i, j,
				sent[j].Via, s.Via, strings.SplitN(s.Text, "\n", 2)[0]))
		}
	}
	return out
}

// lateFromDeadRuns counts the messages recorded after a later run's.
func lateFromDeadRuns(sent []telegramtest.Sent) int {
	late, newest := 0, 0
	for _, s := range sent {
		n, err := strconv.Atoi(strings.TrimPrefix(s.Via, "run"))
		if err != nil {
			continue
		}
		if n < newest {
			late++
		}
		newest = max(newest, n)
	}
	return late
}

type crashReport struct {
	unanswered []int
	// givenUp are the unanswered inputs whose chat got the give-up notice
	// (dispatch.giveUp: the process died too often while their turn ran).
	givenUp    []int
	superseded int // interrupt mode: dropped for a newer message that was answered
	chunks     int
	dupChunks  int
	dupLines   []string
}

// countReplies attributes every delivered chunk to the markers its lines
// name; a chunk whose lines were all delivered before is a duplicate.
func countReplies(sent []telegramtest.Sent, total int) crashReport {
	var rep crashReport
	seen := map[string]bool{}
	answered := map[string]bool{}
	notified := map[string]bool{}
	for _, s := range sent {
		if s.Method == "sendMessage" && strings.HasPrefix(s.Text, "Sorry — I could not answer your message") {
			if m := markerRE.FindString(s.Text); m != "" {
				notified[m] = true
			}
			continue
		}
		if s.Method != "sendMessage" || !strings.HasPrefix(s.Text, "[") {
			continue
		}
		rep.chunks++
		allSeen := true
		for _, line := range strings.Split(s.Text, "\n") {
			if line == "" {
				continue
			}
			key := strconv.FormatInt(s.ChatID, 10) + "|" + line
			if !seen[key] {
				allSeen = false
			}
			seen[key] = true
			head, _, _ := strings.Cut(line, "]")
			for _, m := range markerRE.FindAllString(head, -1) {
				answered[m] = true
			}
		}
		if allSeen {
			rep.dupChunks++
			rep.dupLines = append(rep.dupLines, strings.SplitN(s.Text, "\n", 2)[0])
		}
	}
	for i := range total {
		if answered["m"+strconv.Itoa(i)] {
			continue
		}
		// Interrupt mode drops a message that a newer one of its chat
		// supersedes (finished, summarised into the next turn; a crash
		// before that turn loses the summary by design): it counts as
		// superseded once a later message of its chat is answered.
		if chat := i % crashChats; chat >= 15 {
			later := false
			for j := i + crashChats; j < total && !later; j += crashChats {
				later = answered["m"+strconv.Itoa(j)]
			}
			if later {
				rep.superseded++
				continue
			}
		}
		rep.unanswered = append(rep.unanswered, i)
		if notified["m"+strconv.Itoa(i)] {
			rep.givenUp = append(rep.givenUp, i)
		}
	}
	return rep
}

// checkCrashTranscripts: every journal record is appended once as a user
// entry, and no input gets two assistant replies (two replies without a
// user message between them).
func checkCrashTranscripts(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s (%v)", dir, err)
	}
	tally := newCrashTally(t)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		prev := ""
		for n := 1; sc.Scan(); n++ {
			var e struct {
				Type      string   `json:"type"`
				RecordIDs []string `json:"recordIds"`
				Message   struct {
					Role string `json:"role"`
				} `json:"message"`
			}
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("%s:%d: %v", p, n, err)
				continue
			}
			if e.Type != "message" {
				continue
			}
			prev = tally.message(fmt.Sprintf("%s:%d", filepath.Base(p), n), prev, e.Message.Role, e.RecordIDs)
		}
		f.Close()
	}
	tally.check()
}

// crashTally counts the journal records transcripts carry and reports
// a second assistant reply to one input.
type crashTally struct {
	t       *testing.T
	records map[string]int
}

func newCrashTally(t *testing.T) *crashTally {
	return &crashTally{t: t, records: map[string]int{}}
}

// message counts one transcript message at where whose predecessor in the
// transcript had role prev ("" for none); it returns role.
func (c *crashTally) message(where, prev, role string, recordIDs []string) string {
	c.t.Helper()
	for _, id := range recordIDs {
		c.records[id]++
	}
	if role == "assistant" && prev == "assistant" {
		c.t.Errorf("%s: a second assistant reply to the same input", where)
	}
	return role
}

// check reports every record appended more than once.
func (c *crashTally) check() {
	c.t.Helper()
	for id, n := range c.records {
		if n > 1 {
			c.t.Errorf("record %s appended %d times", id, n)
		}
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func firstN[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// newCrashDaemon writes the config of a daemon on state against the fakes
// (queue is messages.queue, extra more YAML such as a storage block) under
// base/logs and returns it, not started. The kills are the test's, not
// the messages' doing: messages.delivery.maxCrashes is at its maximum
// (100, above any run's kills), or a turn slower than the kill interval
// (seconds of lane wait on a loaded machine) dies 5 times in a row and is
// given up with a notice (seen: 17 of 6059 inputs in one run).
func newCrashDaemon(t *testing.T, base, state string, tg *telegramtest.Server, model *openaitest.Server, queue, extra string) *crashDaemon {
	t.Helper()
	d := &crashDaemon{t: t, addr: freeAddr(t), logs: filepath.Join(base, "logs"), tg: tg}
	if err := os.MkdirAll(d.logs, 0o700); err != nil {
		t.Fatal(err)
	}
	d.cfg = filepath.Join(d.logs, "gateway.yaml")
	d.config = func(apiRoot string) string {
		return fmt.Sprintf(`stateDir: %s
http: {listen: %q}
log: {level: info, format: console}
channels:
  telegram:
    accounts:
      default: {token: %q, apiRoot: %q, dmPolicy: open, pollTimeoutSeconds: 1}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model, maxConcurrent: 8}
  list: [{id: main}]
messages:
  queue: %s
  delivery: {maxCrashes: 100}
`, state, d.addr, tg.Token(), apiRoot, model.BaseURL(), queue) + extra
	}
	if err := os.WriteFile(d.cfg, []byte(d.config(tg.URL)), 0o600); err != nil {
		t.Fatal(err) // for the tests that read the file before the first start
	}
	return d
}
