package filestore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// startBenchEnv adds sizes to BenchmarkStartFirstUse (comma-separated
// session counts, e.g. 1000000); startBenchDirEnv keeps the states it
// builds in that directory for the next run (building 100,000 sessions
// through the real write path takes a minute, 1,000,000 ten).
const (
	startBenchEnv    = "SESSIONS_START_BENCH_N"
	startBenchDirEnv = "SESSIONS_START_BENCH_DIR"
)

// startKey is the key of the i-th session buildSessions creates.
func startKey(i int) routing.Key {
	k, _ := routing.PeerKey("main", "telegram", "", routing.Direct, strconv.Itoa(100000+i))
	return k
}

// startOptions are the options of every start the benchmark measures:
// the daemon's (the default cache) with a cap above n.
func startOptions(dir string, n int) Options {
	return Options{StateDir: dir, CacheTTL: -1, Maintenance: sessions.Maintenance{MaxEntries: 10 * n}}
}

// buildSessions leaves n sessions of agent main below dir through the real
// write path (Begin, a transcript with a user and an assistant message,
// the counters the turn adds), as a daemon that served them would, and
// closes the Manager. It returns the keys (startKey(0) to startKey(n-1)).
func buildSessions(tb testing.TB, dir string, n int) []routing.Key {
	tb.Helper()
	m, err := Open(startOptions(dir, n))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := m.Store("main")
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				key := startKey(i)
				e, _, err := s.Begin(ctx, key, sessions.Origin{Channel: "telegram", ChatType: "direct", To: strconv.Itoa(100000 + i)})
				if err == nil {
					var t *transcript.File
					if t, err = s.TranscriptOf(e); err == nil {
						now := time.Now()
						_, err = t.AppendLazy(ctx, sessions.UserText("hello", now), sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "hi there"}}, Timestamp: now.UnixMilli()})
					}
				}
				if err != nil {
					errs <- err
					return
				}
				s.AddCounters(key, sessions.Counters{Messages: 2})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	if err := m.Close(); err != nil {
		tb.Fatal(err)
	}
	keys := make([]routing.Key, n)
	for i := range keys {
		keys[i] = startKey(i)
	}
	return keys
}

// startState returns a state dir holding n sessions built by
// buildSessions: a new temporary one, or the one kept below
// $SESSIONS_START_BENCH_DIR from an earlier run.
func startState(b *testing.B, n int) string {
	root := os.Getenv(startBenchDirEnv)
	if root == "" {
		dir := b.TempDir()
		buildSessions(b, dir, n)
		return dir
	}
	dir := filepath.Join(root, fmt.Sprintf("start-%d", n))
	done := filepath.Join(dir, "complete")
	if fileExists(done) {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	buildSessions(b, dir, n)
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d sessions built in %v", n, time.Since(start))
	return dir
}

// BenchmarkStartFirstUse: the real start path of a store with n sessions
// (built by buildSessions), after a clean shutdown: Open, then the first
// Get of a session, which a first reply waits for. Between runs (off the
// clock) the start's background work is let finish, so every run starts
// from a clean mark as a restarted daemon does. peak-RSS-MB is the peak
// resident size of a child process that starts on the same state, answers
// the first Get and finishes the start's background work (the counter
// repair pass and maintenance): the daemon's memory at that size.
func BenchmarkStartFirstUse(b *testing.B) {
	sizes := []int{1000, 10000, 100000}
	if v := os.Getenv(startBenchEnv); v != "" {
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want session counts", startBenchEnv, v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			dir := startState(b, n)
			key := startKey(n / 2)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				m, err := Open(startOptions(dir, n))
				if err != nil {
					b.Fatal(err)
				}
				s, err := m.Store("main")
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := s.Get(key); err != nil || !ok {
					b.Fatal(ok, err)
				}
				b.StopTimer()
				s.awaitRepair()
				if err := m.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			if r, ok := startChildRun(b, dir, n); ok {
				b.ReportMetric(r.first.Seconds()*1000, "child-first-ms")
				b.ReportMetric(r.firstCPU.Seconds()*1000, "child-first-cpu-ms")
				b.ReportMetric(float64(r.rssKiB)/1024, "peak-RSS-MB")
			}
		})
	}
}

// childResult is what a start child reports: the time from Open to the
// answer of the first Get, the CPU time the process used until then (all
// its threads: a figure the machine's load does not inflate), its peak RSS.
type childResult struct {
	first, firstCPU time.Duration
	rssKiB          int64
}

// startChildRun starts a child process on dir (role "start") and returns
// what it reports; ok is false where the kernel does not report RSS.
func startChildRun(b *testing.B, dir string, n int) (r childResult, ok bool) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=start", "SESSIONS_TEST_DIR="+dir, "SESSIONS_TEST_ARG="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("start child: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "FIRST":
			r.first = time.Duration(v)
		case "FIRSTCPU":
			r.firstCPU = time.Duration(v)
		case "RSS":
			r.rssKiB, ok = v, v > 0
		}
	}
	return r, ok
}

// childStart is the child of startChildRun: it starts on dir as the
// daemon does, answers the first Get, lets the start's background work
// finish (the counter repair pass; maintenance, run again to be sure it
// ran), and prints "FIRST <ns>", "FIRSTCPU <ns>" and "RSS <peak KiB>".
func childStart(dir, arg string) error {
	n, err := strconv.Atoi(arg)
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := Open(startOptions(dir, n))
	if err != nil {
		return err
	}
	s, err := m.Store("main")
	if err != nil {
		return err
	}
	if _, ok, err := s.Get(startKey(n / 2)); err != nil || !ok {
		return fmt.Errorf("first Get: %v %v", ok, err)
	}
	fmt.Println("FIRST", time.Since(start).Nanoseconds())
	fmt.Println("FIRSTCPU", cpuTime().Nanoseconds())
	s.awaitRepair()
	if _, err := m.Maintain(context.Background()); err != nil {
		return err
	}
	fmt.Println("RSS", peakRSSKiB())
	return m.Close()
}

// cpuTime is the CPU time this process has used (0 where unknown).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSKiB is this process's peak resident size (VmHWM), 0 where
// /proc does not report it.
func peakRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
