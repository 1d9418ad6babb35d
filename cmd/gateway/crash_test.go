package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// inFlightIn is inFlight for a backend whose storage is in the state
	// dir (sqlite), given it.
	inFlightIn func(t *testing.T, state string, records []string) (pending int, detail string)
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
	inFlight := b.inFlight
	if b.inFlightIn != nil {
		inFlight = func(t *testing.T, records []string) (int, string) { return b.inFlightIn(t, r.state, records) }
	}
	r.report(t, kills, inFlight)
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
	// A cap of 20 (the default) is below a chat's share of a run, so the
	// followup chats drop with a summary under load and around the kills:
	// a drop must not lose its message (dispatch/overflow.go).
	d := newCrashDaemon(t, base, state, tg, model, "{mode: collect, debounce: 50ms, cap: 20}", storage)
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
		t.Errorf("%d reply chunks delivered twice outside the documented window (the first copy was not the last thing its run sent to that chat before the kill): %v\n%s",
			len(outside), firstN(outside, 5), d.sendLog(outside))
	}
	// Every chunk delivered twice was sent again knowing its first
	// attempt's outcome unknown, and counted so
	// (gateway_outbound_uncertain_total): the counter never hides one.
	uncertain := uncertainSends(t, d.logs)
	t.Logf("%d chunks sent again with their first attempt's outcome unknown (gateway_outbound_uncertain_total over the runs), %d of them delivered twice",
		uncertain, rep.dupChunks)
	if rep.dupChunks > uncertain {
		t.Errorf("%d chunks delivered twice but only %d uncertain resends counted: a duplicate the counter does not show", rep.dupChunks, uncertain)
	}
	if rep.dupChunks > kills/20 {
		// All in the window (checked above); at this rate the window is
		// about one per 20 kills: more says the window grew.
		t.Logf("note: %d chunks twice in %d kills is more than the expected 1 per 20 kills; their first lines: %q",
			rep.dupChunks, kills, firstN(rep.dupLines, 10))
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
