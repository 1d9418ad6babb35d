package pgstore

import (
	"errors"
	"slices"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// A batch's records are stored by one write, in their order (seq is the
// order a restart replays them in), visible to another connection before
// the wait; a known id and a second copy within the batch are duplicates;
// a record the store cannot hold is refused alone; one WAL flush serves
// the batch.
func TestAcceptDeferredAllOneWriteInOrder(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := db.Delivery(DeliveryOptions{})
	defer d.Close()
	ctx := ctxT(t)
	if dup, err := d.Accept(ctx, record("known")); err != nil || dup {
		t.Fatalf("Accept = %v, %v", dup, err)
	}
	// Ids that sort otherwise than their order: the group commit sorts
	// writes by key, never the statements of one write.
	ids := []string{"r9", "r10", "known", "r1", "bad\x00id", "r10", "r2"}
	var recs []sessions.Record
	for _, id := range ids {
		recs = append(recs, record(id))
	}
	writes := d.writes.Load()
	dups, errs, wait := d.AcceptDeferredAll(ctx, recs)
	if n := d.writes.Load() - writes; n != 1 {
		t.Errorf("%d writes for a batch, want 1", n)
	}
	wantDup := []bool{false, false, true, false, false, true, false}
	if !slices.Equal(dups, wantDup) {
		t.Errorf("dups = %v, want %v", dups, wantDup)
	}
	for i, err := range errs {
		if (err != nil) != (i == 4) {
			t.Errorf("errs[%d] (%q) = %v", i, ids[i], err)
		}
	}
	if errs[4] != nil && errors.Is(errs[4], sessions.ErrStorage) {
		t.Errorf("the bad id's error %v is a storage error (the adapter would retry it for ever)", errs[4])
	}
	rows, err := db.pool.Query(ctx, `SELECT id FROM delivery_records WHERE state = 'pending' AND id <> 'known' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		order = append(order, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"r9", "r10", "r1", "r2"}; !slices.Equal(order, want) {
		t.Errorf("stored in seq order %v, want %v (the batch's)", order, want)
	}
	if err := wait(); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if dup, err := d.Accept(ctx, record("r2")); err != nil || !dup {
		t.Errorf("Accept after the batch = dup %v, %v; want a duplicate", dup, err)
	}
}

// A batch that cannot be written fails every record with a storage error,
// and the handle reports the failure until a write succeeds.
func TestAcceptDeferredAllFailsWhole(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := db.Delivery(DeliveryOptions{})
	defer d.Close()
	boom := errors.New("connection reset")
	d.fault = func(op string) error {
		if op == "accept" {
			return boom
		}
		return nil
	}
	dups, errs, wait := d.AcceptDeferredAll(ctxT(t), []sessions.Record{record("a"), record("b")})
	for i := range errs {
		if dups[i] || !errors.Is(errs[i], sessions.ErrStorage) || !errors.Is(errs[i], boom) {
			t.Errorf("record %d: dup %v, err %v; want a storage error", i, dups[i], errs[i])
		}
	}
	if err := wait(); err != nil {
		t.Errorf("wait of a batch that stored nothing = %v, want nil (its records carry the error)", err)
	}
	if d.Health() == nil {
		t.Error("Health is nil after a failed accept")
	}
}

// A batch of one record is committed with its WAL flush: one round trip,
// its wait costs none (before: a lazy commit, then a flush). A batch of
// several keeps its lazy commit and one flush for all; a batch of one
// that is a duplicate flushes on its own (its original may be a lazy
// commit not flushed yet).
func TestAcceptDeferredAllOneRecordOneRoundTrip(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := db.Delivery(DeliveryOptions{})
	defer d.Close()
	ctx := ctxT(t)
	for _, tc := range []struct {
		name          string
		recs          []string
		accept, flush int64
	}{
		{"one record", []string{"a1"}, 1, 0},
		{"two records", []string{"b1", "b2"}, 1, 1},
		{"one duplicate", []string{"b2"}, 1, 1},
	} {
		var recs []sessions.Record
		for _, id := range tc.recs {
			recs = append(recs, record(id))
		}
		before := opCounts(db, OpAccept, OpAcceptWait)
		_, errs, wait := d.AcceptDeferredAll(ctx, recs)
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := wait(); err != nil {
			t.Fatalf("%s: wait: %v", tc.name, err)
		}
		after := opCounts(db, OpAccept, OpAcceptWait)
		accept := after[OpAccept][0] - before[OpAccept][0]
		flush := after[OpAcceptWait][0] - before[OpAcceptWait][0]
		if accept != tc.accept || flush != tc.flush {
			t.Errorf("%s: %d accept and %d accept_wait round trips, want %d and %d", tc.name, accept, flush, tc.accept, tc.flush)
		}
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_records WHERE state = 'pending'`).Scan(&n); err != nil || n != 3 {
		t.Errorf("%d records pending (%v), want 3", n, err)
	}
}
