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
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// A row another transaction holds (an operator's open transaction, a
// stuck replica) fails the group's writes of that row once they waited
// the lock timeout — not the statement timeout, and not once more each
// alone — and the group's other writes commit in one more round trip: one
// session's locked row does not hold up every other session's writes.
// With a statement timeout no longer than the lock timeout, the statement
// timeout ends the wait first (query_canceled): the same holds (before,
// such a group was tried again write by write, the locked one waiting its
// timeout once more, and nothing was logged).
func TestWriteGroupLockedRowFailsOnlyItsWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stmt time.Duration
		code string
	}{
		{"lock timeout", 5 * time.Second, lockNotAvailable},
		{"statement timeout", groupLockTimeout, queryCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lockedRowGroup(t, tc.stmt, tc.code)
		})
	}
}

// heldRowDB opens a DB of statement timeout stmt with the test table and
// its row 'locked' held by the transaction it returns (rolled back when
// the test ends, if not before).
func heldRowDB(t *testing.T, stmt time.Duration) (*DB, pgx.Tx) {
	t.Helper()
	db, err := Open(context.Background(), Options{URL: pgtest.NewDatabase(t), MaxConns: 20, StatementTimeout: stmt,
		Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	groupTable(t, db)
	if _, err := db.pool.Exec(ctxT(t), `INSERT INTO gw_test VALUES ('locked', 1)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.pool.Begin(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctxT(t), `SELECT 1 FROM gw_test WHERE k = 'locked' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return db, tx
}

// heldRowWrite is a write of the row heldRowDB holds (key gw/k3x: between
// the others' keys k0..k9 in key order).
func heldRowWrite() *write {
	return &write{op: "test", key: rowKey("gw", "k3x"), fill: func(b *pgx.Batch) {
		b.Queue(`UPDATE gw_test SET v = v + 1 WHERE k = 'locked'`)
	}}
}

// handOverHeld hands ws over to g while its committer is held, waits
// until all are queued, releases the committer and returns their
// outcomes.
func handOverHeld(t *testing.T, g *writeGroup, ws []*write, release func()) []error {
	t.Helper()
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = g.do(context.Background(), w) })
	}
	waitFor(t, 10*time.Second, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.queue) == len(ws) })
	release()
	wg.Wait()
	return errs
}

// lockedRowGroup runs TestWriteGroupLockedRowFailsOnlyItsWrites on a DB
// of statement timeout stmt; the locked row's writes must fail with code.
func lockedRowGroup(t *testing.T, stmt time.Duration, code string) {
	db, _ := heldRowDB(t, stmt)

	// A group commit of one committer, held in a write while the writes
	// queue, so that they all travel in one group.
	g, release := heldGroup(t, db)

	before := opCounts(db, OpGroup, "test")
	var ws []*write
	for i := range 8 {
		w := insertWrite(fmt.Sprint("k", i), i)
		w.key = rowKey("gw", fmt.Sprint("k", i))
		ws = append(ws, w)
	}
	for range 2 { // the locked row's writes, between the others in key order
		ws = append(ws, heldRowWrite())
	}
	errs := handOverHeld(t, g, ws, release)

	for i, err := range errs {
		var pe *pgconn.PgError
		switch {
		case i >= 8 && (!errors.As(err, &pe) || pe.Code != code):
			t.Errorf("write %d of the locked row = %v, want SQLSTATE %s", i, err, code)
		case i < 8 && err != nil:
			t.Errorf("write %d = %v, want committed", i, err)
		case i < 8 && countRows(t, db, fmt.Sprint("k", i)) != 1:
			t.Errorf("write %d is not committed", i)
		}
	}
	after := opCounts(db, OpGroup, "test")
	if d := after[OpGroup][0] - before[OpGroup][0]; d != 2 {
		t.Errorf("%d group round trips, want 2 (the group, then the group without the locked row's writes)", d)
	}
	if d := after["test"][0] - before["test"][0]; d != 0 {
		t.Errorf("%d writes tried alone, want 0", d)
	}
}

// TestWriteGroupHeldRowWaitsOnTheSide: once a write met a held row, the
// row's next writes wait for it on the side path, alone, and the next
// group of the other writes commits in one round trip without meeting it
// (before: the held row's write joined that group too, which waited the
// lock timeout and was committed a second time without it, each time the
// row's session tried again). Once the row is free, a write of it commits
// on the side and the row's writes travel in the groups again.
func TestWriteGroupHeldRowWaitsOnTheSide(t *testing.T) {
	t.Parallel()
	db, tx := heldRowDB(t, 5*time.Second)
	g, release := heldGroup(t, db)

	// round hands over four inserts and a write of the held row while the
	// committer is held, then lets it go; it returns the held row's
	// write's error and the group round trips and writes tried alone it
	// cost.
	next := 0
	round := func(release func()) (error, int64, int64) {
		t.Helper()
		before := opCounts(db, OpGroup, "test")
		ws := []*write{heldRowWrite()}
		for range 4 {
			k := fmt.Sprint("k", next)
			next++
			w := insertWrite(k, 1)
			w.key = rowKey("gw", k)
			ws = append(ws, w)
		}
		errs := handOverHeld(t, g, ws, release)
		for i, err := range errs[1:] {
			if err != nil {
				t.Errorf("insert %d = %v, want committed", i, err)
			}
		}
		after := opCounts(db, OpGroup, "test")
		return errs[0], after[OpGroup][0] - before[OpGroup][0], after["test"][0] - before["test"][0]
	}
	isLock := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == lockNotAvailable
	}

	// The first meeting: the group waits once, as before.
	if err, groups, alone := round(release); !isLock(err) || groups != 2 || alone != 0 {
		t.Fatalf("first meeting: held row's write %v, %d group round trips, %d alone; want lock_not_available, 2, 0", err, groups, alone)
	}
	// The row still held: its write waits on the side, the group does not.
	if err, groups, alone := round(holdCommitter(t, g)); !isLock(err) || groups != 1 || alone != 1 {
		t.Errorf("row still held: held row's write %v, %d group round trips, %d alone; want lock_not_available, 1, 1", err, groups, alone)
	}
	// The row free: its write commits on the side, which lets the row go.
	if err := tx.Rollback(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err, groups, alone := round(holdCommitter(t, g)); err != nil || groups != 1 || alone != 1 {
		t.Errorf("row freed: held row's write %v, %d group round trips, %d alone; want committed, 1, 1", err, groups, alone)
	}
	// And its writes travel in the groups again.
	if err, groups, alone := round(holdCommitter(t, g)); err != nil || groups != 1 || alone != 0 {
		t.Errorf("row let go: its write %v, %d group round trips, %d alone; want committed, 1, 0", err, groups, alone)
	}
	var v int
	if err := db.pool.QueryRow(ctxT(t), `SELECT v FROM gw_test WHERE k = 'locked'`).Scan(&v); err != nil || v != 3 {
		t.Errorf("held row's value %d (%v), want 3: the two writes after it was freed", v, err)
	}
}
