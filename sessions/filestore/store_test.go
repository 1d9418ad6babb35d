package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/google/go-cmp/cmp"
)

// readIndexFile reads what is durable on disk: sessions.json with its
// change log applied (ReadIndex), as another process would see it.
func readIndexFile(t *testing.T, s *Store) map[string]sessions.Entry {
	t.Helper()
	m, err := ReadIndex(s.dir)
	if err != nil {
		t.Fatalf("read index: %v", err)
	}
	return m
}

func TestBeginCreatesDurableEntry(t *testing.T) {
	verifyNoLeaks(t)
	// The message is begun when it was sent: a new session's idle clock
	// never starts before the session (sessions.StartInteraction).
	at := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	m := openTestManager(t, "", Options{Now: func() time.Time { return at }})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "42")
	e, info := mustBegin(t, s, k, sessions.Origin{Channel: "telegram", ChatType: "direct", To: "42", From: "42", Name: "Ann",
		Title: "  hello\n\tthere, this is a fairly long first message", At: at})
	if !info.Created || info.ResetReason != "" {
		t.Fatalf("info = %+v, want Created", info)
	}
	if err := sessions.CheckSessionID(e.SessionID); err != nil {
		t.Fatal(err)
	}
	if got, want := e.Title, "hello there, this is a fairly"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	if !e.LastInteractionAt.Equal(at) || e.LastTo != "42" || e.DisplayName != "Ann" || e.Channel != "telegram" {
		t.Errorf("entry = %+v", e)
	}
	disk := readIndexFile(t, s)
	if diff := cmp.Diff(e, disk[k.String()]); diff != "" {
		t.Errorf("on disk (-mem +disk):\n%s", diff)
	}
	for _, p := range []string{filepath.Join(m.StateDir(), "agents"), filepath.Join(m.StateDir(), "agents", "main"), s.Dir()} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, err %v; want 0700", p, fi.Mode().Perm(), err)
		}
	}
	if fi, _ := os.Stat(s.indexPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("index mode %v, want 0600", fi.Mode().Perm())
	}
	got, ok, err := s.GetByID(e.SessionID)
	if err != nil || !ok || got.SessionKey != k.String() {
		t.Errorf("GetByID = %+v %v %v", got, ok, err)
	}
}

func TestRoutineUpdatesAreCoalesced(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{FlushInterval: time.Hour})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "42")
	e0, _ := mustBegin(t, s, k, sessions.Origin{Channel: "telegram", To: "42", Title: "hi"})
	before, _ := os.ReadFile(s.indexPath)
	fi0, _ := os.Stat(s.indexPath)

	later := e0.LastInteractionAt.Add(time.Minute)
	e1, info := mustBegin(t, s, k, sessions.Origin{Channel: "telegram", To: "43", Title: "second", At: later})
	if info.Created || e1.SessionID != e0.SessionID {
		t.Fatalf("second Begin made a new session: %+v", info)
	}
	for range 100 {
		s.AddCounters(k, sessions.Counters{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Messages: 2, ContextTokens: 99, Model: "m"})
	}
	after, _ := os.ReadFile(s.indexPath)
	fi1, _ := os.Stat(s.indexPath)
	if string(before) != string(after) || !os.SameFile(fi0, fi1) {
		t.Fatalf("routine updates rewrote sessions.json synchronously")
	}
	got, _, _ := s.Get(k)
	if got.InputTokens != 1000 || got.TotalTokens != 1500 || got.MessageCount != 200 || got.ContextTokens != 99 ||
		got.LastTo != "43" || !got.LastInteractionAt.Equal(later) || got.Title != "hi" {
		t.Errorf("cached entry = %+v", got)
	}
	if !got.LastInteractionAt.Equal(later) {
		t.Errorf("lastInteractionAt = %v, want %v", got.LastInteractionAt, later)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	disk := readIndexFile(t, s)
	if diff := cmp.Diff(got, disk[k.String()]); diff != "" {
		t.Errorf("after Close (-mem +disk):\n%s", diff)
	}
}

func TestCountersDoNotMoveLastInteraction(t *testing.T) {
	verifyNoLeaks(t)
	clk := newFakeClock(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	m := openTestManager(t, "", Options{Now: clk.Now})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "1")
	e0, _ := mustBegin(t, s, k, sessions.Origin{})
	clk.Advance(time.Hour)
	s.AddCounters(k, sessions.Counters{Messages: 1})
	if _, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error { e.Label = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	got, _, _ := s.Get(k)
	if !got.LastInteractionAt.Equal(e0.LastInteractionAt) {
		t.Errorf("lastInteractionAt moved: %v -> %v", e0.LastInteractionAt, got.LastInteractionAt)
	}
	if !got.UpdatedAt.Equal(clk.Now()) {
		t.Errorf("updatedAt = %v, want %v", got.UpdatedAt, clk.Now())
	}
}

func TestFlusherWritesCounters(t *testing.T) {
	verifyNoLeaks(t)
	m := openTestManager(t, "", Options{FlushInterval: 10 * time.Millisecond})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "1")
	mustBegin(t, s, k, sessions.Origin{})
	s.AddCounters(k, sessions.Counters{TotalTokens: 7})
	deadline := time.Now().Add(10 * time.Second)
	for readIndexFile(t, s)[k.String()].TotalTokens != 7 {
		if time.Now().After(deadline) {
			t.Fatal("counters never reached sessions.json")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestIdenticalBytesNotRewritten(t *testing.T) {
	verifyNoLeaks(t)
	clk := newFakeClock(time.Now())
	m := openTestManager(t, "", Options{Now: clk.Now})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "1")
	mustBegin(t, s, k, sessions.Origin{})
	if _, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error { e.Label = "a"; return nil }); err != nil {
		t.Fatal(err)
	}
	// What is durable: the index file's identity and the change log's size.
	durable := func() string {
		fi, _ := os.Stat(s.indexPath)
		dl, _ := os.Stat(s.deltaPath)
		var size int64
		if dl != nil {
			size = dl.Size()
		}
		return fmt.Sprint(fi.Sys(), size)
	}
	d0 := durable()
	// With a frozen clock, a patch that sets what is already there changes
	// no byte and must write nothing.
	if _, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error { e.Label = "b"; return nil }); err != nil {
		t.Fatal(err)
	}
	d1 := durable()
	if _, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error { e.Label = "b"; return nil }); err != nil {
		t.Fatal(err)
	}
	d2 := durable()
	if d0 == d1 {
		t.Error("a real change was not written")
	}
	if d1 != d2 {
		t.Error("identical bytes were rewritten")
	}
}

func TestCacheRevalidatesAgainstOtherWriter(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	a := openTestManager(t, dir, Options{CacheTTL: time.Hour})
	b := openTestManager(t, dir, Options{CacheTTL: 0})
	sa, sb := mustStore(t, a, "main"), mustStore(t, b, "main")
	k := dmKey(t, "main", "1")
	if _, ok, _ := sa.Get(k); ok { // loads a's cache (empty)
		t.Fatal("unexpected entry")
	}
	if _, ok, _ := sb.Get(k); ok {
		t.Fatal("unexpected entry")
	}
	e, _ := mustBegin(t, sa, k, sessions.Origin{})
	if got, ok, _ := sb.Get(k); !ok || got.SessionID != e.SessionID {
		t.Errorf("TTL 0: other process's write not seen: %v %+v", ok, got)
	}
	if _, err := sb.Patch(context.Background(), k, func(e *sessions.Entry) error { e.Label = "from-b"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := sa.Get(k); got.Label != "" {
		t.Errorf("TTL 1h: read was not served from the cache (label %q)", got.Label)
	}
	// A durable change re-reads under the lock and so never loses b's write.
	if _, err := sa.Patch(context.Background(), k, func(e *sessions.Entry) error { e.QueueMode = "steer"; return nil }); err != nil {
		t.Fatal(err)
	}
	got, _, _ := sa.Get(k)
	if got.Label != "from-b" || got.QueueMode != "steer" {
		t.Errorf("merged entry = %+v", got)
	}
}

func TestCacheTTLFromEnv(t *testing.T) {
	t.Setenv(CacheTTLEnv, "1500")
	m := openTestManager(t, "", Options{CacheTTL: -1})
	if m.cacheTTL != 1500*time.Millisecond {
		t.Errorf("cacheTTL = %v", m.cacheTTL)
	}
	t.Setenv(CacheTTLEnv, "x")
	if _, err := Open(Options{StateDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), CacheTTLEnv) {
		t.Errorf("bad env: err = %v", err)
	}
}

func TestConcurrentGoroutinesTwoManagersLoseNothing(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	ms := []*Manager{openTestManager(t, dir, Options{CacheTTL: -1}), openTestManager(t, dir, Options{CacheTTL: 0})}
	k := dmKey(t, "main", "shared")
	mustBegin(t, mustStore(t, ms[0], "main"), k, sessions.Origin{})
	const G, N = 8, 15
	var wg sync.WaitGroup
	for i, m := range ms {
		s := mustStore(t, m, "main")
		for g := range G {
			wg.Go(func() {
				for n := range N {
					if _, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error { e.QueueCap++; return nil }); err != nil {
						t.Error(err)
						return
					}
					own := dmKey(t, "main", strings.Repeat("p", i+1)+string(rune('a'+g))+string(rune('a'+n)))
					if _, _, err := s.Begin(context.Background(), own, sessions.Origin{}); err != nil {
						t.Error(err)
						return
					}
					s.AddCounters(k, sessions.Counters{InputTokens: 1})
				}
			})
		}
	}
	wg.Wait()
	for _, m := range ms {
		if err := m.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s := mustStore(t, ms[1], "main")
	disk := readIndexFile(t, s)
	if got := disk[k.String()]; got.QueueCap != 2*G*N || got.InputTokens != 2*G*N {
		t.Errorf("queueCap %d inputTokens %d, want %d each", got.QueueCap, got.InputTokens, 2*G*N)
	}
	if len(disk) != 1+2*G*N {
		t.Errorf("%d entries, want %d", len(disk), 1+2*G*N)
	}
}

func TestWrongAgentKeyRejected(t *testing.T) {
	m := openTestManager(t, "", Options{})
	s := mustStore(t, m, "main")
	_, _, err := s.Begin(context.Background(), dmKey(t, "other", "1"), sessions.Origin{})
	if err == nil {
		t.Fatal("key of another agent accepted")
	}
	if _, err := s.Patch(context.Background(), dmKey(t, "main", "nobody"), func(*sessions.Entry) error { return nil }); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Patch unknown: %v", err)
	}
}

// TestInternalWorkDoesNotMoveIdleClock: a subagent's announcement into its
// parent is not user input; it must not postpone the parent's idle reset.
func TestInternalWorkDoesNotMoveIdleClock(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC))
	m := openTestManager(t, "", Options{Now: clk.Now, Reset: sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: intp(10)}}})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "42")
	first, _ := mustBegin(t, s, k, sessions.Origin{Channel: "telegram", To: "42", At: clk.Now()})
	clk.Advance(8 * time.Minute)
	e, info := mustBegin(t, s, k, sessions.Origin{At: clk.Now(), Internal: true})
	if info.ResetReason != "" || !e.LastInteractionAt.Equal(first.LastInteractionAt) {
		t.Fatalf("announcement moved the idle clock: %+v %+v", info, e)
	}
	if got, _, _ := s.Get(k); !got.LastInteractionAt.Equal(first.LastInteractionAt) {
		t.Fatalf("stored lastInteractionAt %v, want %v", got.LastInteractionAt, first.LastInteractionAt)
	}
	clk.Advance(4 * time.Minute) // 12 minutes after the last real input
	if _, info := mustBegin(t, s, k, sessions.Origin{Channel: "telegram", To: "42", At: clk.Now()}); info.ResetReason != "idle" {
		t.Fatalf("user message 12 minutes after the last input: %+v, want an idle reset", info)
	}
}

// TestPassiveReaderDoesNotDoubleCounters: a CLI listing sessions right
// after a turn (the daemon's counters not flushed yet) must not repair them
// from the transcript and write the index: the daemon's flush would then
// count the same messages twice.
func TestPassiveReaderDoesNotDoubleCounters(t *testing.T) {
	dir := t.TempDir()
	daemon := openTestManager(t, dir, Options{maintainAfter: -1})
	ds := mustStore(t, daemon, "main")
	k := dmKey(t, "main", "42")
	e, _ := mustBegin(t, ds, k, sessions.Origin{Channel: "telegram", To: "42"})
	// The maintenance pass after Open writes the index when it runs: after
	// AddCounters below it would flush them (CI run 40: the CLI saw 2).
	<-daemon.started
	tr, err := ds.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(context.Background(), user("hi"), assistantText("hello")); err != nil {
		t.Fatal(err)
	}
	ds.AddCounters(k, sessions.Counters{Messages: 2}) // coalesced, not flushed yet

	cli := openTestManager(t, dir, Options{Passive: true})
	cs := mustStore(t, cli, "main")
	if got, ok, err := cs.Get(k); err != nil || !ok || got.MessageCount != 0 {
		t.Fatalf("CLI view %+v %v %v", got, ok, err)
	}
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	if err := daemon.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := readIndexFile(t, ds)[k.String()]; got.MessageCount != 2 {
		t.Fatalf("messageCount %d after the flush, want 2", got.MessageCount)
	}
}

// TestBeginSeesResetByAnotherProcess: within the cache TTL, a reset made
// by another process (the CLI with --no-daemon) is seen by the next Begin,
// and a session another process created is found by id, instead of the
// cached entry winning and the turn landing in an orphan transcript.
func TestBeginSeesResetByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	daemon := mustStore(t, openTestManager(t, dir, Options{CacheTTL: time.Hour}), "main")
	cli := mustStore(t, openTestManager(t, dir, Options{CacheTTL: time.Hour, Passive: true}), "main")
	ctx := context.Background()
	k := dmKey(t, "main", "42")
	first, _ := mustBegin(t, daemon, k, sessions.Origin{Channel: "telegram"})

	reset, err := cli.Reset(ctx, k, sessions.ResetOptions{Manual: true, Reason: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if reset.SessionID == first.SessionID {
		t.Fatal("reset kept the session id")
	}
	next, _ := mustBegin(t, daemon, k, sessions.Origin{Channel: "telegram"})
	if next.SessionID != reset.SessionID {
		t.Fatalf("Begin after another process's reset returned %s, want the new session %s (old %s)",
			next.SessionID, reset.SessionID, first.SessionID)
	}

	other := dmKey(t, "main", "43")
	made, _ := mustBegin(t, cli, other, sessions.Origin{Channel: "telegram"})
	if e, ok, err := daemon.GetByID(made.SessionID); err != nil || !ok || e.SessionKey != other.String() {
		t.Fatalf("GetByID of a session another process made: %v %v %+v", ok, err, e)
	}
	if _, ok, err := daemon.Get(other); err != nil || !ok {
		t.Fatalf("Get of a session another process made: %v %v", ok, err)
	}
}

// TestOwnWritesNeverReloadTheIndex: sessions created and looked up from
// many goroutines at once (a burst of new web chats) never make the store
// read its whole index again because it saw its own commit's files change
// mid-write: with 100,000 sessions such a reload per lookup made each
// round of new chats slower than the last (16 % of the first round's
// throughput after ten rounds).
func TestOwnWritesNeverReloadTheIndex(t *testing.T) {
	dir := t.TempDir()
	st := mustStore(t, openTestManager(t, dir, Options{CacheTTL: time.Hour}), "main")
	ctx := context.Background()
	mustBegin(t, st, dmKey(t, "main", "first"), sessions.Origin{Channel: "web"})
	st.mu.Lock()
	before := st.reloads
	st.mu.Unlock()
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				k := dmKey(t, "main", fmt.Sprintf("g%d-%d", g, i))
				if _, _, err := st.Get(k); err != nil { // a miss re-checks the files
					t.Error(err)
					return
				}
				if _, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "web"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st.mu.Lock()
	after := st.reloads
	st.mu.Unlock()
	if after != before {
		t.Fatalf("the index was read again %d times during the store's own writes", after-before)
	}
	if es, err := st.List(); err != nil || len(es) != 501 {
		t.Fatalf("%d sessions listed (%v), want 501", len(es), err)
	}
}
