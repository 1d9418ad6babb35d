package pgstore

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestDeliveryLiveOwnerKept: what an open handle holds (records, replies,
// drafts) is not taken over by another open handle, through any of
// Pending, Replies, Drafts and Orphans, while its lease runs; once its
// lease ran out without a renewal (its process is stopped or cut off from
// the database: issue 13), its records and replies are taken over, never
// its drafts (best-effort, cleaned up by their owner or after its death).
func TestDeliveryLiveOwnerKept(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &settable{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	owner := newDelivery(t, db, DeliveryOptions{Now: clk.Now})
	other := newDelivery(t, db, DeliveryOptions{Now: clk.Now})
	leaveWork(t, owner)
	clk.Advance(DefaultLease / 2) // within the lease: liveness and the lease keep them
	if ps, err := other.Pending(); err != nil || len(ps) != 0 {
		t.Errorf("Pending of another handle = %d records, %v; want none while the owner lives", len(ps), err)
	}
	if rs, err := other.Replies(); err != nil || len(rs) != 0 {
		t.Errorf("Replies of another handle = %d, %v; want none while the owner lives", len(rs), err)
	}
	if ds, err := other.Drafts(); err != nil || len(ds) != 0 {
		t.Errorf("Drafts of another handle = %d, %v; want none while the owner lives", len(ds), err)
	}
	if recs, reps, err := other.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
		t.Errorf("Orphans of another handle = %d records, %d replies, %v; want none", len(recs), len(reps), err)
	}
	// The owner's own replies stay listed for it.
	if rs, err := owner.Replies(); err != nil || len(rs) != 1 || rs[0].ID != "rp" {
		t.Errorf("Replies of the owner = %+v, %v; want rp", rs, err)
	}

	clk.Advance(DefaultLease * 10) // no renewal since: the owner counts as stopped
	recs, reps, err := other.Orphans(ctx)
	if err != nil || len(recs) != 2 || len(reps) != 1 {
		t.Errorf("Orphans after the owner's lease ran out = %d records, %d replies, %v; want 2 (the unanswered) and 1", len(recs), len(reps), err)
	}
	if ds, err := other.Drafts(); err != nil || len(ds) != 0 {
		t.Errorf("Drafts of another handle = %d, %v; want none while the owner lives", len(ds), err)
	}
	// The stopped owner, back, no longer marks what it lost.
	if err := owner.Done("r1", "r2", "r3"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_records WHERE owner = $1 AND state = 'pending'`,
		other.Owner()).Scan(&n); err != nil || n != 2 {
		t.Errorf("the new owner's pending records after the old one's Done = %d, %v; want its 2 still pending", n, err)
	}
}

// leaveWork gives d three pending records (one answered by an outstanding
// reply), a reply and a draft.
func leaveWork(t *testing.T, d *Delivery) {
	t.Helper()
	mustAccept(t, d, "r1", "r2", "r3")
	for _, err := range []error{
		d.Start("r1"),
		d.Ready(sessions.Reply{ID: "rp", Records: []string{"r1"}, SessionKey: "agent:main:telegram:group:1",
			Target: json.RawMessage(`{}`), Chunks: []string{"a", "b"}}),
		d.Draft(sessions.Draft{ID: "d1", Target: json.RawMessage(`{}`), MessageID: "7"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeliveryDeadOwnerTakenOnce: when a handle's process dies (its lock
// connection ends, nothing released, its leases still running) its work
// is visible at once, and of two concurrent claimers each row goes to
// exactly one.
func TestDeliveryDeadOwnerTakenOnce(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	dead := newDelivery(t, db, DeliveryOptions{})
	const n = 200
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("m%03d", i))
	}
	mustAccept(t, dead, ids...)
	for i := range 20 {
		rp := sessions.Reply{ID: fmt.Sprint("rp", i), SessionKey: "agent:main:telegram:group:1",
			Target: json.RawMessage(`{}`), Chunks: []string{"x"}}
		if err := dead.Ready(rp); err != nil {
			t.Fatal(err)
		}
	}
	a := newDelivery(t, db, DeliveryOptions{})
	b := newDelivery(t, db, DeliveryOptions{})
	if recs, reps, err := a.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
		t.Fatalf("Orphans before the death = %d, %d, %v; want none", len(recs), len(reps), err)
	}
	dead.lock.drop()

	var (
		wg           sync.WaitGroup
		mu           sync.Mutex
		gotRecs      []string
		gotReps      []string
		perHandleRec [2]int
	)
	for i, h := range []*Delivery{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var recs []sessions.Record
			var reps []sessions.Reply
			var err error
			if i == 0 {
				recs, reps, err = h.Orphans(ctx)
			} else {
				recs, err = h.Pending()
				if err == nil {
					reps, err = h.Replies()
				}
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			perHandleRec[i] = len(recs)
			for _, r := range recs {
				gotRecs = append(gotRecs, r.ID)
			}
			for _, r := range reps {
				gotReps = append(gotReps, r.ID)
			}
		}()
	}
	wg.Wait()
	sort.Strings(gotRecs)
	if !slices.Equal(gotRecs, ids) {
		t.Fatalf("records taken over: %d (%d by Orphans, %d by Pending), want each of %d exactly once",
			len(gotRecs), perHandleRec[0], perHandleRec[1], n)
	}
	if len(gotReps) != 20 || len(slices.Compact(slices.Sorted(slices.Values(gotReps)))) != 20 {
		t.Fatalf("replies taken over: %v; want each of 20 exactly once", gotReps)
	}
	// Taken over means owned: the other claimer and a third handle see
	// none of it, and the taker's Pending returns its share again.
	c := newDelivery(t, db, DeliveryOptions{})
	if recs, reps, err := c.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
		t.Errorf("Orphans after the take-over = %d, %d, %v; want none", len(recs), len(reps), err)
	}
	if ps, err := b.Pending(); err != nil || len(ps) != perHandleRec[1] {
		t.Errorf("second Pending of the taker = %d, %v; want its %d again", len(ps), err, perHandleRec[1])
	}
	// Its Close releases them at once to the next.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if recs, _, err := c.Orphans(ctx); err != nil || len(recs) != perHandleRec[1] {
		t.Errorf("Orphans after the taker closed = %d, %v; want %d", len(recs), err, perHandleRec[1])
	}
}

// TestDeliveryDeadOwnerDraftsAndReplies: a start after a death gets the
// dead handle's replies (not its answered record) and drafts at once,
// with no lease to wait for.
func TestDeliveryDeadOwnerDraftsAndReplies(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	dead := newDelivery(t, db, DeliveryOptions{})
	leaveWork(t, dead)
	dead.lock.drop()
	next := newDelivery(t, db, DeliveryOptions{})
	ps, err := next.Pending()
	if err != nil || len(ps) != 2 || ps[0].ID != "r2" || ps[1].ID != "r3" {
		t.Errorf("Pending = %+v, %v; want r2, r3 (r1 is answered by rp)", ps, err)
	}
	rs, err := next.Replies()
	if err != nil || len(rs) != 1 || rs[0].ID != "rp" {
		t.Errorf("Replies = %+v, %v; want rp", rs, err)
	}
	ds, err := next.Drafts()
	if err != nil || len(ds) != 1 || ds[0].ID != "d1" {
		t.Errorf("Drafts = %+v, %v; want d1", ds, err)
	}
	if ds, err := next.Drafts(); err != nil || len(ds) != 1 {
		t.Errorf("second Drafts = %+v, %v; want d1 again", ds, err)
	}
	if err := next.DraftDone("d1"); err != nil {
		t.Fatal(err)
	}
	if ds, err := next.Drafts(); err != nil || len(ds) != 0 {
		t.Errorf("Drafts after DraftDone = %+v, %v; want none", ds, err)
	}
}

// TestOwnerLockEncoding: the decoding of pg_locks (classid high, objid low
// 32 bits) matches hashtextextended for keys of either sign.
func TestOwnerLockEncoding(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	pooled, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pooled.Hijack() // holds the locks until the test ends
	defer conn.Close(ctx)
	var neg, pos int
	owners := make([]string, 16)
	for i := range owners {
		owners[i] = fmt.Sprint("owner-", i)
		var k int64
		if err := conn.QueryRow(ctx, `SELECT hashtextextended($1, 0) FROM pg_advisory_lock(hashtextextended($1, 0))`, owners[i]).Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k < 0 {
			neg++
		} else {
			pos++
		}
	}
	if neg == 0 || pos == 0 {
		t.Fatalf("keys: %d negative, %d positive; want both signs", neg, pos)
	}
	var alive int
	err = db.pool.QueryRow(ctx, `WITH `+liveOwnersCTE+`
		SELECT count(*) FROM unnest($1::text[]) o WHERE hashtextextended(o, 0) IN (SELECT k FROM live)`,
		append(owners, "not-locked")).Scan(&alive)
	if err != nil || alive != len(owners) {
		t.Errorf("owners seen alive = %d, %v; want %d (and not the unlocked one)", alive, err, len(owners))
	}
}

// TestWaitOrphansWokenByClose: a handle's Close wakes a waiting replica at
// once, after its lock is gone, so the Orphans that follows finds its rows.
func TestWaitOrphansWokenByClose(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	leaving := db.Delivery(DeliveryOptions{})
	mustAccept(t, leaving, "left")
	waiter := newDelivery(t, db, DeliveryOptions{})
	woke := make(chan time.Duration, 1)
	listening := time.Now()
	go func() {
		start := time.Now()
		waiter.WaitOrphans(ctx, 20*time.Second)
		woke <- time.Since(start)
	}()
	time.Sleep(300 * time.Millisecond) // let it LISTEN
	if err := leaving.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case took := <-woke:
		if took > 10*time.Second {
			t.Fatalf("WaitOrphans returned after %s, not woken by Close", took)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("WaitOrphans not woken by Close %s after it began", time.Since(listening))
	}
	recs, _, err := waiter.Orphans(ctx)
	if err != nil || len(recs) != 1 || recs[0].ID != "left" {
		t.Errorf("Orphans after the wake = %+v, %v; want the closed handle's record", recs, err)
	}
}

// TestWaitOrphansCloseBetweenWaitsHeard: a handle that closes while the
// replica is between two waits for orphans (looking for them) ends the
// next wait at once, instead of being missed until the wait's timeout;
// and a wait costs no round trip of the pool (one listening connection
// per handle, not a LISTEN and an UNLISTEN every two seconds).
func TestWaitOrphansCloseBetweenWaitsHeard(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	leaving := db.Delivery(DeliveryOptions{})
	mustAccept(t, leaving, "left")
	waiter := newDelivery(t, db, DeliveryOptions{})
	before := opCounts(db, OpClaim)[OpClaim]
	waiter.WaitOrphans(ctx, 50*time.Millisecond) // starts its listener
	if after := opCounts(db, OpClaim)[OpClaim]; after != before {
		t.Errorf("a wait for orphans cost %v round trips and commits of the pool, want none", [2]int64{after[0] - before[0], after[1] - before[1]})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN `+releasedDeliveryChannel+`'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter's listening connection never listened")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := leaving.Close(); err != nil { // nobody waits now
		t.Fatal(err)
	}
	start := time.Now()
	waiter.WaitOrphans(ctx, 20*time.Second)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the wait after a close heard between waits took %s, want at once", took)
	}
	recs, _, err := waiter.Orphans(ctx)
	if err != nil || len(recs) != 1 || recs[0].ID != "left" {
		t.Errorf("Orphans after the wake = %+v, %v; want the closed handle's record", recs, err)
	}
}

// TestDeliveryCutOffOwnerNotTakenAtReturn: when the owner locks' connections
// are cut (a database restart terminates every connection), the handle
// that takes its lock again first does not take the other owners' rows in
// the moment before they take theirs again: a live owner that delivered a
// reply just before the cut and could not mark it sent would see it sent
// twice (TestReplicasWebhookFailover: a chunk delivered by two replicas
// after the outage). Once its lock has been held for a lease again, a
// truly dead owner's rows are taken as before.
func TestDeliveryCutOffOwnerNotTakenAtReturn(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &settable{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	owner := newDelivery(t, db, DeliveryOptions{Now: clk.Now})
	other := newDelivery(t, db, DeliveryOptions{Now: clk.Now})
	leaveWork(t, owner)
	const key = "agent:main:telegram:group:2"
	turn, err := owner.BeginTurn(ctx, "main", key, nil)
	if err != nil || !turn.Held {
		t.Fatalf("the owner's turn: %+v, %v", turn, err)
	}
	defer turn.End()

	// Both lock connections end; the owner has not taken its lock again
	// when the other asks.
	for _, d := range []*Delivery{owner, other} {
		d.lock.mu.Lock()
		pid := d.lock.conn.PgConn().PID()
		d.lock.mu.Unlock()
		var ok bool
		if err := db.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1, 5000)`, pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("terminate the lock connection of %s: %v, %v", d.Owner(), ok, err)
		}
	}
	if recs, reps, err := other.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
		t.Errorf("Orphans at once after the cut = %d records, %d replies, %v; want none (the owner is taking its lock again)", len(recs), len(reps), err)
	}
	if ps, err := other.Pending(); err != nil || len(ps) != 0 {
		t.Errorf("Pending at once after the cut = %d records, %v; want none", len(ps), err)
	}
	if h, err := other.BeginTurn(ctx, "main", key, nil); err != nil || h.Held {
		t.Errorf("BeginTurn of the owner's running session at once after the cut: held %v, %v; want not held", h != nil && h.Held, err)
		if err == nil && h.Held {
			h.End()
		}
	}

	// A lease later the owner, alive, holds its lock and renewed leases:
	// kept.
	if err := owner.lock.hold(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(DefaultLease)
	if err := owner.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, reps, err := other.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
		t.Errorf("Orphans of a live owner a lease after the cut = %d records, %d replies, %v; want none", len(recs), len(reps), err)
	}

	// The owner dies: its rows are taken as soon as the server has ended
	// its lock's session (closing the connection ends it a moment later:
	// a CI run once took the reply but not yet the records in one call).
	owner.lock.drop()
	nrecs, nreps := 0, 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (nrecs < 2 || nreps < 1); time.Sleep(20 * time.Millisecond) {
		recs, reps, err := other.Orphans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nrecs, nreps = nrecs+len(recs), nreps+len(reps)
	}
	if nrecs != 2 || nreps != 1 {
		t.Errorf("Orphans after the owner died took %d records and %d replies; want 2 and 1", nrecs, nreps)
	}
}
