package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// groupTable makes a table for the group commit tests.
func groupTable(t *testing.T, db *DB) {
	t.Helper()
	if _, err := db.pool.Exec(ctxT(t), `CREATE TABLE gw_test (k text PRIMARY KEY, v int NOT NULL CHECK (v >= 0))`); err != nil {
		t.Fatal(err)
	}
}

// insertWrite inserts (k, v).
func insertWrite(k string, v int) *write {
	return &write{op: "test", fill: func(b *pgx.Batch) { b.Queue(`INSERT INTO gw_test VALUES ($1, $2)`, k, v) }}
}

func countRows(t *testing.T, db *DB, k string) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(ctxT(t), `SELECT count(*) FROM gw_test WHERE k = $1`, k).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Writes handed over while the groups are in flight share the next one:
// one round trip and one commit for all. A write the server refuses fails
// alone; the others of its group commit.
func TestWriteGroupShares(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	groupTable(t, db)
	// A group commit of one committer, held in a write while 20 queue.
	g := &writeGroup{db: db, committers: 1, wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); g.run(ctx) }()
	defer func() { cancel(); <-ran }()
	hold := make(chan struct{})
	held := &write{op: "hold", fill: func(b *pgx.Batch) {
		b.Queue(`SELECT 1`).Exec(func(pgconn.CommandTag) error { <-hold; return nil })
	}}
	var release sync.Once
	defer release.Do(func() { close(hold) }) // a failed wait leaves no committer held
	go func() { _ = g.do(context.Background(), held) }()
	waitFor(t, 10*time.Second, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.taken == 1 })
	before := opCounts(db, OpGroup, "test")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range 20 {
		v := i
		if i == 7 {
			v = -1 // refused by the CHECK
		}
		w := insertWrite(fmt.Sprint("k", i), v)
		wg.Go(func() { errs[i] = g.do(context.Background(), w) })
	}
	waitFor(t, 10*time.Second, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.queue) == 20 })
	release.Do(func() { close(hold) })
	wg.Wait()
	for i, err := range errs {
		var pe *pgconn.PgError
		switch {
		case i == 7 && !errors.As(err, &pe):
			t.Errorf("write 7 = %v, want the server's refusal", err)
		case i != 7 && err != nil:
			t.Errorf("write %d = %v", i, err)
		}
		if want := map[bool]int{true: 0, false: 1}[i == 7]; countRows(t, db, fmt.Sprint("k", i)) != want {
			t.Errorf("write %d: %d rows, want %d", i, 1-want, want)
		}
	}
	after := opCounts(db, OpGroup, "test")
	if d := after[OpGroup][0] - before[OpGroup][0]; d != 1 {
		t.Errorf("%d group round trips, want 1 (then each write alone)", d)
	}
	if d := after["test"][1] - before["test"][1]; d != 19 {
		t.Errorf("%d writes committed alone after the refusal, want 19", d)
	}
}

// A rider is committed with the next write handed over after it, which
// returns only once both are; alone, it goes after riderDelay. A barrier
// returns once everything before it is done, without a round trip.
func TestWriteGroupRiders(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	groupTable(t, db)
	g := db.writes
	done := make(chan error, 2)
	r := insertWrite("rider", 1)
	r.done = func(err error) { done <- err }
	before := opCounts(db, OpGroup, "test")
	g.ride(r)
	if err := g.do(ctxT(t), insertWrite("carrier", 1)); err != nil {
		t.Fatal(err)
	}
	if countRows(t, db, "rider") != 1 {
		t.Error("the rider is not committed when the write after it returns")
	}
	if err := <-done; err != nil {
		t.Errorf("rider: %v", err)
	}
	after := opCounts(db, OpGroup, "test")
	if trips := after[OpGroup][0] - before[OpGroup][0] + after["test"][0] - before["test"][0]; trips != 1 {
		t.Errorf("rider and carrier took %d round trips, want 1", trips)
	}

	alone := insertWrite("alone", -1) // refused: its done gets the error
	alone.done = func(err error) { done <- err }
	start := time.Now()
	g.ride(alone)
	if err := <-done; err == nil {
		t.Error("a refused rider reported no error")
	}
	if waited := time.Since(start); waited < riderDelay {
		t.Errorf("a rider alone went after %s, before riderDelay", waited)
	}
	late := insertWrite("late", 1)
	g.ride(late)
	before = opCounts(db, OpGroup, "test")
	g.barrier()
	if countRows(t, db, "late") != 1 {
		t.Error("a rider before a barrier is not committed when it returns")
	}
	after = opCounts(db, OpGroup, "test")
	if trips := after[OpGroup][0] - before[OpGroup][0] + after["test"][0] - before["test"][0]; trips != 1 {
		t.Errorf("a barrier behind a rider took %d round trips, want the rider's 1", trips)
	}
}

// A write returns only once every group taken before its own has its
// outcome, even when its own committed first.
func TestWriteGroupReleasesInOrder(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	groupTable(t, db)
	g := &writeGroup{db: db, committers: 2, wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); g.run(ctx) }()
	defer func() { cancel(); <-ran }()
	hold := make(chan struct{})
	first := &write{op: "hold", fill: func(b *pgx.Batch) {
		b.Queue(`SELECT 1`).Exec(func(pgconn.CommandTag) error { <-hold; return nil })
	}}
	var release sync.Once
	defer release.Do(func() { close(hold) })
	firstDone := make(chan error, 1)
	go func() { firstDone <- g.do(context.Background(), first) }()
	waitFor(t, 10*time.Second, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.taken == 1 })
	second := make(chan error, 1)
	go func() { second <- g.do(context.Background(), insertWrite("second", 1)) }()
	waitFor(t, 10*time.Second, func() bool { return countRows(t, db, "second") == 1 }) // committed
	select {
	case err := <-second:
		t.Fatalf("the second write returned (%v) before the first group had its outcome", err)
	case <-time.After(50 * time.Millisecond):
	}
	release.Do(func() { close(hold) })
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}
