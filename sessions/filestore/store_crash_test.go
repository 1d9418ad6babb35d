package filestore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
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
)

// childEnv selects a child-process role; the test binary re-executes itself
// with it (crash writer, concurrent updater, lock holder).
const childEnv = "SESSIONS_TEST_CHILD"

// TestMain runs the child roles of the multi-process tests. (The package's
// only TestMain; other test files add none.)
func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role, os.Getenv("SESSIONS_TEST_DIR"), os.Getenv("SESSIONS_TEST_ARG")))
	}
	os.Exit(m.Run())
}

func runChild(role, dir, arg string) int {
	var err error
	switch role {
	case "crash":
		err = childCrashWriter(dir, arg)
	case "update":
		err = childUpdater(dir, arg)
	case "hold":
		err = childHold(arg)
	case "start":
		err = childStart(dir, arg)
	case "journal":
		err = childJournal(dir, arg)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func startChild(t *testing.T, role, dir, arg string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "SESSIONS_TEST_DIR="+dir, "SESSIONS_TEST_ARG="+arg)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(out)
}

// childCrashWriter writes messages through the public API from several
// goroutines, printing "ACK <sessionId> <text>" once Append returned.
func childCrashWriter(dir, round string) error {
	m, err := Open(Options{StateDir: dir, FlushInterval: 5 * time.Millisecond, CacheTTL: -1})
	if err != nil {
		return err
	}
	s, err := m.Store("main")
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, "READY") // the parent's clock for the kill starts here
	var (
		wg   sync.WaitGroup
		outM sync.Mutex
	)
	for g := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				k, _ := routing.PeerKey("main", "telegram", "", routing.Direct, fmt.Sprintf("g%d-%d", g, i%3))
				e, _, err := s.Begin(ctx, k, sessions.Origin{Channel: "telegram", Title: "t"})
				if err != nil {
					fmt.Fprintln(os.Stderr, "begin:", err)
					return
				}
				tr, err := s.Transcript(e.SessionID)
				if err != nil {
					return
				}
				text := fmt.Sprintf("r%s-g%d-i%d", round, g, i)
				if _, err := tr.Append(ctx, sessions.UserText(text, time.Now())); err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					return
				}
				s.AddCounters(k, sessions.Counters{Messages: 1, TotalTokens: 3})
				outM.Lock()
				fmt.Fprintf(os.Stdout, "ACK %s %s\n", e.SessionID, text)
				outM.Unlock()
				switch i % 11 {
				case 5:
					_, err = s.Reset(ctx, k, sessions.ResetOptions{Manual: true})
				case 8:
					_, err = s.Patch(ctx, k, func(e *sessions.Entry) error { e.Label = text; return nil })
				case 10:
					err = s.Delete(ctx, k)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "op:", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return m.Close()
}

// childLines delivers the child's output lines until it ends; a torn last
// line is dropped (it was not acknowledged).
func childLines(out *bufio.Reader) <-chan string {
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	return lines
}

// waitReady waits for the child's READY line (a minute at most: a child
// that never gets there has failed, and its error is on stderr).
func waitReady(t *testing.T, cmd *exec.Cmd, lines <-chan string) {
	t.Helper()
	defer func() {
		if t.Failed() {
			_ = cmd.Process.Kill()
		}
	}()
	select {
	case l, ok := <-lines:
		if !ok || strings.TrimSpace(l) != "READY" {
			t.Fatalf("the child's first line is %q (open %v), want READY", l, ok)
		}
	case <-time.After(time.Minute):
		t.Fatal("the child did not open the state dir within a minute")
	}
}

// TestCrashSafety SIGKILLs a writer at random moments and checks that what
// it acknowledged survived and that every file still loads.
func TestCrashSafety(t *testing.T) {
	dir := t.TempDir()
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	acked := map[string][]string{} // session id -> texts
	for r := range rounds {
		cmd, out := startChild(t, "crash", dir, strconv.Itoa(r))
		lines := childLines(out)
		// Most rounds kill the writer at a random moment of its writes,
		// timed from its READY (starting a race-enabled child on a loaded
		// 2-core machine can take longer than the whole window: a CI run
		// once killed all 50 before the first write); every fifth kills it
		// while it opens the state dir (start-up repair).
		if r%5 != 4 {
			waitReady(t, cmd, lines)
		}
		time.Sleep(time.Duration(20+rand.IntN(120)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "ACK" {
				acked[f[1]] = append(acked[f[1]], f[2])
			}
		}
		_ = cmd.Wait()
	}
	if len(acked) == 0 {
		t.Fatal("the child acknowledged nothing")
	}
	verifyNoLeaks(t)
	m := openTestManager(t, dir, Options{})
	s := mustStore(t, m, "main")
	readIndexFile(t, s) // parses
	entries, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(s.Dir(), "*.jsonl*"))
	byID := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, ".lock") || strings.HasSuffix(f, ".tmp") {
			continue
		}
		id := strings.SplitN(filepath.Base(f), ".", 2)[0]
		byID[id] = append(byID[id], f)
	}
	total := 0
	for id, texts := range acked {
		have := map[string]bool{}
		for _, f := range byID[id] {
			for _, txt := range historyTexts(t, f) {
				have[txt] = true
			}
		}
		for _, txt := range texts {
			total++
			if !have[txt] {
				t.Errorf("acknowledged message %s of session %s lost", txt, id)
			}
		}
	}
	// Lagging counters were repaired from the transcripts.
	for _, e := range entries {
		tr, err := s.Transcript(e.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		n, _, err := tr.Stats(context.Background())
		if err != nil {
			t.Errorf("transcript %s does not load: %v", e.SessionID, err)
			continue
		}
		if e.MessageCount != n {
			t.Errorf("session %s: messageCount %d, transcript has %d", e.SessionID, e.MessageCount, n)
		}
	}
	t.Logf("%d rounds, %d acknowledged messages in %d sessions, %d current entries", rounds, total, len(acked), len(entries))
}

// childUpdater increments a shared entry from many goroutines.
func childUpdater(dir, tag string) error {
	m, err := Open(Options{StateDir: dir, FlushInterval: 2 * time.Millisecond, CacheTTL: -1})
	if err != nil {
		return err
	}
	if err := hammer(m, tag); err != nil {
		return err
	}
	return m.Close()
}

const hammerG, hammerN = 6, 20

func hammer(m *Manager, tag string) error {
	s, err := m.Store("main")
	if err != nil {
		return err
	}
	k, _ := routing.MainKey("main", "main")
	var (
		wg   sync.WaitGroup
		errM sync.Mutex
		errs []error
	)
	for g := range hammerG {
		wg.Go(func() {
			for n := range hammerN {
				_, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error { e.QueueCap++; return nil })
				if err == nil {
					own, _ := routing.PeerKey("main", "web", "", routing.Direct, fmt.Sprintf("%s-%d-%d", tag, g, n))
					_, _, err = s.Begin(context.Background(), own, sessions.Origin{})
				}
				s.AddCounters(k, sessions.Counters{InputTokens: 1})
				if err != nil {
					errM.Lock()
					errs = append(errs, err)
					errM.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func TestTwoProcessesLoseNoUpdate(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{FlushInterval: 2 * time.Millisecond})
	s := mustStore(t, m, "main")
	k, _ := routing.MainKey("main", "main")
	mustBegin(t, s, k, sessions.Origin{})
	cmd, out := startChild(t, "update", dir, "child")
	if err := hammer(m, "parent"); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	disk := readIndexFile(t, s)
	want := 2 * hammerG * hammerN
	if got := disk[k.String()]; got.QueueCap != want || got.InputTokens != int64(want) {
		t.Errorf("queueCap %d inputTokens %d, want %d", got.QueueCap, got.InputTokens, want)
	}
	if len(disk) != 1+want {
		t.Errorf("%d entries, want %d", len(disk), 1+want)
	}
}
