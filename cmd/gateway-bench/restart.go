package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// Restart after SIGKILL (-mode restart, issue 21 item 4): one daemon long-
// polls the fake Bot API under steady traffic (-rate messages a second
// over -chats chats); -runs times it is SIGKILLed at a random moment and
// started again at once on the same state (files, sqlite, or the same
// -postgres database; with -replicas 1 under the same replica id, as a
// replica restarted in place). Measured for each restart: from the new
// process's start to its first getUpdates (polling again), to /readyz,
// and from the kill to the first getUpdates. At the end the traffic stops
// and every message must be answered (lost fails the run); a reply sent
// twice is counted apart: a kill between a chunk's send and its mark
// sends it again after the restart, the documented window. With -signal
// term each stop is a SIGTERM (a deploy's restart), waited for: kill_to_poll
// then includes the shutdown.

// restartMinRun and restartMaxRun bound the random time a daemon runs
// before its kill.
const (
	restartMinRun = 500 * time.Millisecond
	restartMaxRun = 1500 * time.Millisecond
)

func restartBench(ctx context.Context, o options) (err error) {
	res := newResults()
	tg := telegramtest.NewServer(telegramtest.Options{OnSent: func(m telegramtest.Sent, at time.Time) {
		if m.Method == "sendMessage" {
			res.onReply(m.ChatID, m.Text, at)
		}
	}})
	defer tg.Close()
	model := openaitest.New()
	defer model.Close()
	model.Forget()
	model.SetReply(benchReply(o.think, 0))

	dir, err := os.MkdirTemp("", "gateway-bench-restart-")
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	defer func() {
		if !o.keep && err == nil {
			os.RemoveAll(dir)
		}
	}()
	db, err := openBenchDB(ctx, o)
	if err != nil {
		return err
	}
	defer db.Close()
	addr, err := freeAddr()
	if err != nil {
		return fmt.Errorf("pick the http address: %w", err)
	}
	spec := daemonSpec{dir: filepath.Join(dir, "gateway"), httpAddr: addr, tg: tg, modelURL: model.BaseURL(), streaming: "off",
		dbURL: db.daemonURL, maxConcurrent: o.maxConcurrent, sqlite: o.sqlite}
	if o.replicas == 1 {
		spec.replicaID, spec.poll = "restart-1", true
	}

	// The traffic goroutine is this function's: stopTraffic ends it and
	// every return waits for it (traffic.done).
	traffic := newSteadyTraffic(tg, res, o.rate, o.chats)
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	go traffic.run(trafficCtx)
	defer func() {
		stopTraffic()
		traffic.done()
	}()

	var toPoll, toReady, killToPoll []time.Duration
	var kills []time.Time // when each kill (or stop) was sent
	var d *daemon
	for k := 0; k <= o.runs; k++ {
		if d, err = startDaemon(o.gateway, "gateway", spec); err != nil {
			return err
		}
		ready, err := d.Ready(ctx)
		if err != nil {
			d.Stop()
			return err
		}
		if k > 0 {
			poll := firstCallAfter(tg, "getUpdates", d.started, 10*time.Second)
			if poll.IsZero() {
				d.Stop()
				return fmt.Errorf("restart %d: no getUpdates within 10 s of the start (log: %s)", k, d.logPath)
			}
			toPoll = append(toPoll, poll.Sub(d.started))
			killAt := kills[len(kills)-1]
			killToPoll = append(killToPoll, poll.Sub(killAt))
			toReady = append(toReady, ready)
			fmt.Printf("restart=%d start_to_poll=%s start_to_ready=%s kill_to_poll=%s\n", k,
				poll.Sub(d.started).Round(time.Millisecond), ready.Round(time.Millisecond), poll.Sub(killAt).Round(time.Millisecond))
		}
		if k == o.runs {
			break
		}
		select {
		case <-ctx.Done(): // interrupted: stop the daemon cleanly
			d.Stop()
			return ctx.Err()
		case <-time.After(restartMinRun + rand.N(restartMaxRun-restartMinRun)):
		}
		if o.signal == "term" { // a clean stop: what a deploy does
			kills = append(kills, time.Now())
			d.Stop()
		} else {
			kills = append(kills, d.Kill())
		}
	}
	defer d.Stop()
	stopTraffic()
	total, avail := traffic.done()
	deadline := time.Now().Add(o.timeout)
	for res.count() < total && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // late duplicates
	lat, lost, dups := res.latencies(avail, total)
	backend := "files"
	switch {
	case o.postgres != "":
		backend = "postgres"
	case o.sqlite:
		backend = "sqlite"
	}
	slices.Sort(toPoll)
	slices.Sort(toReady)
	slices.Sort(killToPoll)
	fmt.Printf("mode=restart backend=%s signal=%s same_replica_id=%t restarts=%d messages=%d chats=%d rate=%d\n",
		backend, o.signal, spec.replicaID != "", len(toPoll), total, o.chats, o.rate)
	fmt.Printf("start_to_poll min=%s p50=%s max=%s\n", pct(toPoll, 0), pct(toPoll, 50), pct(toPoll, 100))
	fmt.Printf("start_to_ready min=%s p50=%s max=%s\n", pct(toReady, 0), pct(toReady, 50), pct(toReady, 100))
	fmt.Printf("kill_to_poll min=%s p50=%s max=%s\n", pct(killToPoll, 0), pct(killToPoll, 50), pct(killToPoll, 100))
	fmt.Printf("latency p50=%s p99=%s max=%s\n", pct(lat, 50), pct(lat, 99), pct(lat, 100))
	fmt.Printf("lost=%d duplicated=%d (a chunk sent again after a kill between its send and its mark)\n", lost, dups)
	if dups > 0 {
		after, before, longest := killOffsets(res.firstCopies(total), kills)
		fmt.Printf("duplicates_first_copy: %d reached the Bot API after the kill signal, %d before it (at most %s before)\n",
			after, before, longest.Round(10*time.Microsecond))
	}
	if lost > 0 {
		fmt.Println(res.misses(total, o.chats, 5))
		return fmt.Errorf("%d messages never answered (logs: %s)", lost, dir)
	}
	return nil
}

// restartFlags names what -mode restart and -signal term do not take:
// one daemon (-replicas 0, or 1 for the same replica id), SIGKILL or
// SIGTERM (term only here).
func restartFlags(o options) error {
	switch {
	case o.mode == "restart" && o.replicas > 1:
		return fmt.Errorf("-mode restart runs one daemon: -replicas %d is neither 0 nor 1 (1: a replica restarted under its id)", o.replicas)
	case o.mode == "restart" && o.replicas == 1 && o.postgres == "":
		return errors.New("-mode restart -replicas 1 needs -postgres")
	case o.mode == "restart" && o.signal == "stop":
		return errors.New("-mode restart takes -signal kill or term, not stop")
	case o.signal == "term" && o.mode != "restart":
		return fmt.Errorf("-signal term is for -mode restart (not %s)", o.mode)
	}
	return nil
}

// firstCallAfter is when the fake first saw method after t0, waiting up
// to limit for it; zero if it did not.
func firstCallAfter(tg *telegramtest.Server, method string, t0 time.Time, limit time.Duration) time.Time {
	deadline := time.Now().Add(limit)
	for {
		for _, at := range tg.CallTimes(method) {
			if at.After(t0) {
				return at
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// steadyTraffic queues a DM in the fake Bot API every 1/rate seconds,
// over chats chats, until its run's ctx ends.
type steadyTraffic struct {
	tg    *telegramtest.Server
	res   *results
	rate  int
	chats int

	mu    sync.Mutex // guards avail
	avail []time.Time
	ended chan struct{}
}

func newSteadyTraffic(tg *telegramtest.Server, res *results, rate, chats int) *steadyTraffic {
	return &steadyTraffic{tg: tg, res: res, rate: max(rate, 1), chats: chats, ended: make(chan struct{})}
}

func (s *steadyTraffic) run(ctx context.Context) {
	defer close(s.ended)
	interval := time.Second / time.Duration(s.rate)
	next := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		next = next.Add(interval)
		s.res.sent(i)
		s.tg.DM(int64(20000+i%s.chats), "m"+strconv.Itoa(i))
		s.mu.Lock()
		s.avail = append(s.avail, time.Now())
		s.mu.Unlock()
	}
}

// done waits for run to return and says how many messages it sent and
// when each became available to the bot.
func (s *steadyTraffic) done() (int, []time.Time) {
	<-s.ended
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.avail), slices.Clone(s.avail)
}

// killOffsets places the first copy of each duplicated chunk against the
// kills: how many reached the fake Bot API after the kill signal nearest
// after them (within killSlack: the request was in the socket when the
// process died), how many before it, and the longest time before. A copy
// at or just before a kill was in flight (sent, its answer never read);
// one long before it was answered and its mark lost.
func killOffsets(firsts, kills []time.Time) (after, before int, longest time.Duration) {
	for _, f := range firsts {
		best, found := time.Duration(0), false
		for _, k := range kills {
			if d := k.Sub(f); d >= -killSlack && (!found || d < best) {
				best, found = d, true
			}
		}
		switch {
		case !found:
		case best < 0:
			after++
		default:
			before++
			longest = max(longest, best)
		}
	}
	return after, before, longest
}

// killSlack is how long after a kill signal a request of the killed
// process may still reach the fake (it was written to the socket before).
const killSlack = 100 * time.Millisecond
