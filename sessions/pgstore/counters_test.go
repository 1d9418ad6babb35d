package pgstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Counters added from many goroutines are all written, and the Store
// reads them at once (its reads wait for the counters queued before).
func TestStoreCountersInBackground(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	st := db.Store("main", nil)
	keys := make([]routing.Key, 5)
	for i := range keys {
		keys[i] = mustKey(t, "main", "telegram", fmt.Sprint(100+i))
		if _, _, err := st.Begin(ctx, keys[i], sessions.Origin{Channel: "telegram"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				st.AddCounters(keys[(g+i)%len(keys)], sessions.Counters{InputTokens: 1, OutputTokens: 2, TotalTokens: 3,
					Messages: 1, Model: "m", ContextTokens: 7})
			}
		})
	}
	wg.Wait()
	var total int
	for _, k := range keys {
		e, ok, err := st.Get(k)
		if err != nil || !ok {
			t.Fatalf("Get %s = %v, %v", k, ok, err)
		}
		if e.InputTokens*3 != e.TotalTokens || e.OutputTokens*3 != e.TotalTokens*2 || e.Model != "m" || e.ContextTokens != 7 {
			t.Errorf("%s: counters %+v not consistent with the deltas added", k, e)
		}
		total += e.MessageCount
	}
	if total != 400 {
		t.Errorf("message counts sum to %d, want 400 (8 goroutines x 50)", total)
	}
}

// Counters queued before a Reset belong to the session it archives.
func TestStoreCountersBeforeReset(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	st := db.Store("main", nil)
	key := mustKey(t, "main", "telegram", "9")
	if _, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram"}); err != nil {
		t.Fatal(err)
	}
	st.AddCounters(key, sessions.Counters{Messages: 3, TotalTokens: 30})
	e, err := st.Reset(ctx, key, sessions.ResetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e.MessageCount != 0 || e.TotalTokens != 0 {
		t.Errorf("new session starts with counters %d messages, %d tokens", e.MessageCount, e.TotalTokens)
	}
	arch, err := st.Archived(key)
	if err != nil || len(arch) != 1 {
		t.Fatalf("Archived = %+v, %v", arch, err)
	}
	if arch[0].MessageCount != 3 || arch[0].TotalTokens != 30 {
		t.Errorf("archived session has %d messages, %d tokens; want the 3 and 30 added before the reset",
			arch[0].MessageCount, arch[0].TotalTokens)
	}
}

// merge folds one session's deltas as applying them in order would.
func TestMergeCounters(t *testing.T) {
	got := merge([]counterReq{
		{agentID: "b", key: "k", c: sessions.Counters{Messages: 1, Model: "m1", ContextTokens: 5}},
		{agentID: "a", key: "k", c: sessions.Counters{Messages: 2}},
		{agentID: "b", key: "k", c: sessions.Counters{Messages: 3, InputTokens: 4, Provider: "p"}},
		{agentID: "b", key: "k", c: sessions.Counters{Model: "m2"}},
	})
	want := []counterReq{
		{agentID: "a", key: "k", c: sessions.Counters{Messages: 2}},
		{agentID: "b", key: "k", c: sessions.Counters{Messages: 4, InputTokens: 4, Model: "m2", Provider: "p", ContextTokens: 5}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("merge = %+v\nwant %+v", got, want)
	}
}

// A session's next Begin writes the counters queued for it in its own
// transaction: no round trip of their own, and the entry it returns
// holds them. Counters of other sessions wait for the writer, which a
// reader hurries.
func TestBeginCarriesCounters(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	st := db.Store("main", idle)
	key, other := mustKey(t, "main", "telegram", "1"), mustKey(t, "main", "telegram", "2")
	for _, k := range []routing.Key{key, other} {
		if _, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram"}); err != nil {
			t.Fatal(err)
		}
	}
	st.AddCounters(key, sessions.Counters{Messages: 2, TotalTokens: 20})
	st.AddCounters(key, sessions.Counters{Messages: 1, TotalTokens: 10, Model: "m"})
	st.AddCounters(other, sessions.Counters{Messages: 5})
	before := opCounts(db, OpBegin, OpCounters)
	e, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	after := opCounts(db, OpBegin, OpCounters)
	if e.MessageCount != 3 || e.TotalTokens != 30 || e.Model != "m" {
		t.Errorf("Begin's entry has %d messages, %d tokens, model %q; want the 3, 30 and m queued", e.MessageCount, e.TotalTokens, e.Model)
	}
	if d := after[OpBegin][0] - before[OpBegin][0]; d != 1 {
		t.Errorf("Begin took %d round trips, want 1", d)
	}
	if d := after[OpCounters][0] - before[OpCounters][0]; d != 0 {
		t.Errorf("the counters took %d round trips of their own, want 0", d)
	}
	start := time.Now()
	got, ok, err := st.Get(other) // waits for the writer, which writes at once
	if err != nil || !ok || got.MessageCount != 5 {
		t.Errorf("Get(other) = %d messages, %v, %v; want the 5 queued", got.MessageCount, ok, err)
	}
	if waited := time.Since(start); waited >= counterLinger {
		t.Errorf("Get waited %s for the counters: the writer lingered", waited)
	}
}

// TestBeginCarriesCountersIntoStaleSession: a Begin that finds its
// session stale still adds the counters queued for it to that session
// (Begin's touch and the counters are one UPDATE, which touches only a
// fresh session), and the session that follows starts from zero with the
// origin of the Begin; the stale one keeps the origin it had.
func TestBeginCarriesCountersIntoStaleSession(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	db.now = clk.now
	st := db.Store("main", idle)
	key := mustKey(t, "main", "telegram", "stale")
	first, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", Name: "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	st.AddCounters(key, sessions.Counters{Messages: 2, TotalTokens: 20, Model: "m"})
	clk.t = clk.t.Add(11 * time.Minute)
	e, info, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", Name: "Bea"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Previous != first.SessionID || e.SessionID == first.SessionID {
		t.Fatalf("stale Begin: info %+v, id %s (old %s)", info, e.SessionID, first.SessionID)
	}
	if e.MessageCount != 0 || e.TotalTokens != 0 || e.DisplayName != "Bea" {
		t.Errorf("new session: %d messages, %d tokens, name %q; want 0, 0, Bea", e.MessageCount, e.TotalTokens, e.DisplayName)
	}
	arch, err := st.Archived(key)
	if err != nil || len(arch) != 1 {
		t.Fatalf("Archived = %+v, %v", arch, err)
	}
	if arch[0].MessageCount != 2 || arch[0].TotalTokens != 20 {
		t.Errorf("stale session archived with %d messages, %d tokens; want the 2 and 20 queued before its Begin",
			arch[0].MessageCount, arch[0].TotalTokens)
	}
}

// TestCounterBookkeepingBySession: a Begin takes its own session's
// requests in the order queued and no other's, waits only for its own
// taken ones, the writer's take gets every other session's, and once all
// are finished nothing is left in the indexes (no entry per session ever
// seen).
func TestCounterBookkeepingBySession(t *testing.T) {
	w := newCounterWriter(&DB{})
	w.add("main", "a", sessions.Counters{Messages: 1})
	w.add("main", "b", sessions.Counters{Messages: 10})
	w.add("main", "a", sessions.Counters{Messages: 2})
	a, b := sessionID("main", "a"), sessionID("main", "b")
	w.mu.Lock()
	mine := w.takeLocked(a)
	if len(mine) != 2 || mine[0].c.Messages != 1 || mine[1].c.Messages != 2 {
		t.Fatalf("take(a) = %+v, want a's two requests in order", mine)
	}
	if !w.outstandingLocked(w.seq, a, true) || w.outstandingLocked(w.seq, b, true) || !w.outstandingLocked(w.seq, b, false) {
		t.Fatal("outstanding: want a's taken, b's queued and not taken")
	}
	if w.outstandingLocked(0, a, false) {
		t.Fatal("outstanding up to seq 0: nothing was queued before it")
	}
	rest := w.takeLocked("")
	w.mu.Unlock()
	if len(rest) != 1 || rest[0].key != "b" {
		t.Fatalf("take(all) = %+v, want b's request", rest)
	}
	w.finish(mine)
	w.mu.Lock()
	if w.outstandingLocked(w.seq, a, false) || !w.outstandingLocked(w.seq, "", true) {
		t.Fatal("after a's finish: want nothing of a outstanding, b's still taken")
	}
	w.mu.Unlock()
	w.finish(rest)
	if len(w.queue) != 0 || w.queued != 0 || len(w.out) != 0 || len(w.outBy) != 0 {
		t.Fatalf("left after every finish: queue %d (%d), out %d, outBy %d", len(w.queue), w.queued, len(w.out), len(w.outBy))
	}
}

// BenchmarkCounterTakeLocked is a Begin's take of its session's counters
// from a queue of 100 sessions' (a burst over 100 chats).
func BenchmarkCounterTakeLocked(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			w := newCounterWriter(&DB{})
			for i := range n {
				w.add("main", fmt.Sprintf("agent:main:telegram:dm:10000%05d", i), sessions.Counters{Messages: 1})
			}
			key := "agent:main:telegram:dm:1000000050"
			session := sessionID("main", key)
			b.ReportAllocs()
			for b.Loop() {
				got := w.takeLocked(session)
				if len(got) != 1 {
					b.Fatalf("took %d requests, want 1", len(got))
				}
				w.finish(got)
				w.add("main", key, sessions.Counters{Messages: 1})
			}
		})
	}
}
