package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

const workers = 50

// run starts n goroutines and fails the test with every error they return.
func run(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if err := fn(i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConcurrentBeginOneEntryPerKey(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x := db.Index("main", nil)
	same := mustKey(t, "main", "telegram", "shared")
	ids := make([]string, workers)
	created := make([]bool, workers)
	run(t, workers, func(i int) error {
		// Half the goroutines all begin one key, the others a key each.
		key := same
		if i%2 == 1 {
			key = mustKey(t, "main", "telegram", fmt.Sprint("own-", i))
		}
		e, info, err := x.Begin(ctx, key, sessions.Origin{Channel: "telegram", From: fmt.Sprint(i)})
		if err != nil {
			return err
		}
		if key == same {
			ids[i], created[i] = e.SessionID, info.Created
		}
		return nil
	})
	var id string
	var nCreated int
	for i := 0; i < workers; i += 2 {
		if id == "" {
			id = ids[i]
		}
		if ids[i] != id {
			t.Errorf("goroutine %d got session %s, another got %s", i, ids[i], id)
		}
		if created[i] {
			nCreated++
		}
	}
	if nCreated != 1 {
		t.Errorf("%d Begins of one key report Created, want 1", nCreated)
	}
	all, err := x.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1+workers/2 {
		t.Errorf("%d entries, want %d (one per key)", len(all), 1+workers/2)
	}
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x := db.Index("main", nil)
	keys := []routing.Key{mustKey(t, "main", "discord", "1"), mustKey(t, "main", "discord", "2")}
	for _, k := range keys {
		if _, _, err := x.Begin(ctx, k, sessions.Origin{}); err != nil {
			t.Fatal(err)
		}
	}
	const rounds = 4
	run(t, workers, func(i int) error {
		k := keys[i%2]
		for range rounds {
			if err := x.AddCounters(ctx, k, sessions.Counters{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, Messages: 1}); err != nil {
				return err
			}
			// A read-modify-write through Patch is serialised by the row lock.
			if _, err := x.Patch(ctx, k, func(e *sessions.Entry) error { e.QueueCap++; return nil }); err != nil {
				return err
			}
			if _, _, err := x.Begin(ctx, k, sessions.Origin{From: fmt.Sprint(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	for _, k := range keys {
		e, _, err := x.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		n := workers / 2 * rounds
		if e.MessageCount != n || e.InputTokens != int64(n) || e.OutputTokens != int64(2*n) || e.TotalTokens != int64(3*n) || e.QueueCap != n {
			t.Errorf("%s: messages %d in %d out %d total %d patches %d, want %d each (x1, x2, x3)",
				k, e.MessageCount, e.InputTokens, e.OutputTokens, e.TotalTokens, e.QueueCap, n)
		}
	}
}

func TestConcurrentResetsArchiveEachSession(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x := db.Index("main", nil)
	key := mustKey(t, "main", "telegram", "r")
	first, _, err := x.Begin(ctx, key, sessions.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, workers)
	run(t, workers, func(i int) error {
		e, err := x.Reset(ctx, key, sessions.ResetOptions{Manual: true})
		ids[i] = e.SessionID
		return err
	})
	// Archived lists the newest sessions.MaxArchivedPerKey; the table
	// holds every one.
	if arch, err := x.Archived(ctx, key); err != nil || len(arch) != sessions.MaxArchivedPerKey {
		t.Fatalf("Archived: %d sessions (%v), want the newest %d", len(arch), err, sessions.MaxArchivedPerKey)
	}
	rows, err := db.pool.Query(ctx, `SELECT session_id FROM archived WHERE agent_id = $1 AND session_key = $2`,
		"main", key.String())
	if err != nil {
		t.Fatal(err)
	}
	arch, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(arch) != workers {
		t.Fatalf("%d archived sessions after %d resets, want %d", len(arch), workers, workers)
	}
	cur, _, _ := x.Get(ctx, key)
	seen := map[string]bool{cur.SessionID: true}
	for _, id := range arch {
		if seen[id] {
			t.Errorf("session %s archived twice or still current", id)
		}
		seen[id] = true
	}
	if !seen[first.SessionID] {
		t.Error("the first session was never archived")
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("reset returned %s, which is neither current nor archived", id)
		}
	}
}

// A reset whose connection dies between archiving the old session and
// writing the new one leaves nothing half-done.
func TestResetKilledMidTransactionIsAtomic(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x := db.Index("main", nil)
	key := mustKey(t, "main", "telegram", "k")
	before, _, err := x.Begin(ctx, key, sessions.Origin{Title: "keep me"})
	if err != nil {
		t.Fatal(err)
	}
	var killed bool
	db.afterArchive = func(ctx context.Context, tx pgx.Tx) {
		var pid int
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Errorf("backend pid: %v", err)
			return
		}
		// Another connection terminates this transaction's backend.
		if err := db.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&killed); err != nil {
			t.Errorf("terminate: %v", err)
		}
	}
	_, err = x.Reset(ctx, key, sessions.ResetOptions{Manual: true})
	db.afterArchive = nil
	if !killed {
		t.Fatal("the backend was not terminated")
	}
	if err == nil {
		t.Fatal("Reset succeeded on a killed connection")
	}
	if !strings.Contains(err.Error(), "pgstore: reset") {
		t.Errorf("error does not name the operation: %v", err)
	}

	after, ok, err := x.Get(ctx, key)
	if err != nil || !ok {
		t.Fatalf("Get after the failed reset: %v %v", ok, err)
	}
	if after.SessionID != before.SessionID || after.Title != "keep me" {
		t.Errorf("entry changed by a failed reset: %+v", after)
	}
	if arch, err := x.Archived(ctx, key); err != nil || len(arch) != 0 {
		t.Errorf("archived rows after a failed reset: %+v %v", arch, err)
	}
	// The pool recovers: the next reset works.
	if e, err := x.Reset(ctx, key, sessions.ResetOptions{}); err != nil || e.SessionID == before.SessionID {
		t.Fatalf("reset after recovery: %v", err)
	}
	if arch, _ := x.Archived(ctx, key); len(arch) != 1 || arch[0].SessionID != before.SessionID {
		t.Errorf("archive after a good reset: %+v", arch)
	}
}

// A statement that times out (here: waiting for a row another transaction
// holds) fails cleanly and leaves nothing locked: the next call works.
func TestStatementTimeoutDoesNotWedge(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	key := mustKey(t, "main", "telegram", "slow")
	if _, _, err := db.Index("main", nil).Begin(ctx, key, sessions.Origin{}); err != nil {
		t.Fatal(err)
	}
	short, err := Open(ctx, Options{URL: pgtest.WithParam(t, url, "statement_timeout", "200")})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	x := short.Index("main", nil)

	holder, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT 1 FROM entries WHERE session_key = $1 FOR UPDATE`, key.String()); err != nil {
		t.Fatal(err)
	}
	_, err = x.Reset(ctx, key, sessions.ResetOptions{Manual: true})
	if err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Fatalf("reset behind a held row lock: %v, want a statement timeout", err)
	}
	if err := x.AddCounters(ctx, key, sessions.Counters{Messages: 1}); err == nil {
		t.Fatal("AddCounters behind a held row lock succeeded")
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Reset(ctx, key, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatalf("reset after the lock was released: %v", err)
	}
	if err := x.AddCounters(ctx, key, sessions.Counters{Messages: 1}); err != nil {
		t.Fatal(err)
	}
	if arch, _ := x.Archived(ctx, key); len(arch) != 1 {
		t.Errorf("%d archived sessions, want 1 (the timed-out reset left none)", len(arch))
	}
}

// Many messages arriving at once for a stale session roll it over once:
// every caller gets the same new session and one archive row is written.
func TestConcurrentBeginOfStaleSessionRollsOverOnce(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := start
	db.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	x := db.Index("main", idle)
	key := mustKey(t, "main", "telegram", "stale")
	old, _, err := x.Begin(ctx, key, sessions.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = start.Add(time.Hour)
	mu.Unlock()
	got := make([]string, workers)
	resets := make([]bool, workers)
	run(t, workers, func(i int) error {
		e, info, err := x.Begin(ctx, key, sessions.Origin{From: fmt.Sprint(i)})
		got[i], resets[i] = e.SessionID, info.ResetReason == sessions.ReasonIdle
		return err
	})
	n := 0
	for i, id := range got {
		if id != got[0] || id == old.SessionID {
			t.Errorf("goroutine %d got session %s (first got %s, old %s)", i, id, got[0], old.SessionID)
		}
		if resets[i] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d Begins report the rollover, want 1", n)
	}
	if arch, _ := x.Archived(ctx, key); len(arch) != 1 || arch[0].SessionID != old.SessionID {
		t.Errorf("archive after concurrent rollover: %+v", arch)
	}
}
