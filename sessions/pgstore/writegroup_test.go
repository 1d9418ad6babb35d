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

// heldGroup starts a group commit of one committer on db, held in a write
// until release, so that the writes handed over meanwhile all travel in
// the group after it. Both stop with the test.
func heldGroup(t *testing.T, db *DB) (g *writeGroup, release func()) {
	t.Helper()
	g = newWriteGroup(db, 1)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); g.run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	return g, holdCommitter(t, g)
}

// holdCommitter holds g's committer in a write until release (called at
// the latest when the test ends), so that the writes handed over
// meanwhile travel in the group after it.
func holdCommitter(t *testing.T, g *writeGroup) (release func()) {
	t.Helper()
	hold, started := make(chan struct{}), make(chan struct{})
	held := &write{op: "hold", fill: func(b *pgx.Batch) {
		b.Queue(`SELECT 1`).Exec(func(pgconn.CommandTag) error { close(started); <-hold; return nil })
	}}
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release) // a failed wait leaves no committer held (runs before heldGroup's stop)
	go func() { _ = g.do(context.Background(), held) }()
	<-started
	return release
}

// Writes handed over while the groups are in flight share the next one:
// one round trip and one commit for all. A write the server refuses fails
// alone; the others of its group commit.
func TestWriteGroupShares(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	groupTable(t, db)
	// A group commit of one committer, held in a write while 20 queue.
	g, release := heldGroup(t, db)
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
	release()
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

// A write returns only once every rider handed over before it has its
// outcome, even when its own group committed first; a write behind a slow
// write that is not a rider is not held up by it.
func TestWriteGroupReleaseWaitsForRiders(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	groupTable(t, db)
	g := newWriteGroup(db, 4) // two for lazy writes
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); g.run(ctx) }()
	defer func() { cancel(); <-ran }()
	var release sync.Once
	hold := make(chan struct{})
	defer release.Do(func() { close(hold) })
	blocking := func(op string, started chan struct{}) *write {
		return &write{op: op, fill: func(b *pgx.Batch) {
			b.Queue(`SELECT 1`).Exec(func(pgconn.CommandTag) error { close(started); <-hold; return nil })
		}}
	}

	// A slow write that is not a rider holds nothing else up.
	slowStarted := make(chan struct{})
	slowDone := make(chan error, 1)
	go func() { slowDone <- g.do(context.Background(), blocking("slow", slowStarted)) }()
	<-slowStarted
	if err := g.do(ctxT(t), insertWrite("after slow", 1)); err != nil {
		t.Fatal(err)
	}
	release.Do(func() { close(hold) })
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}

	// A slow rider holds up the writes handed over after it.
	hold = make(chan struct{})
	release = sync.Once{}
	riderStarted := make(chan struct{})
	riderDone := make(chan error, 1)
	r := blocking("rider", riderStarted)
	r.done = func(err error) { riderDone <- err }
	g.ride(r)
	<-riderStarted // sent alone after riderDelay, on one committer
	second := make(chan error, 1)
	go func() { second <- g.do(context.Background(), insertWrite("second", 1)) }()
	waitFor(t, 10*time.Second, func() bool { return countRows(t, db, "second") == 1 }) // committed on the other
	select {
	case err := <-second:
		t.Fatalf("the write after a rider returned (%v) before the rider had its outcome", err)
	case <-time.After(50 * time.Millisecond):
	}
	release.Do(func() { close(hold) })
	if err := <-riderDone; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}
