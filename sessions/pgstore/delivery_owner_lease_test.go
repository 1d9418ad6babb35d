package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// rowVersions maps owner's records and replies to their row versions
// (xmin): a row written since has another.
func rowVersions(t testing.TB, db *DB, owner string) map[string]string {
	t.Helper()
	rows, err := db.pool.Query(context.Background(), `SELECT 'record ' || id, xmin::text FROM delivery_records WHERE owner = $1
		UNION ALL SELECT 'reply ' || id, xmin::text FROM delivery_replies WHERE owner = $1`, owner)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var id, xmin string
		if err := rows.Scan(&id, &xmin); err != nil {
			t.Fatal(err)
		}
		out[id] = xmin
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeliveryRenewWritesOneRow: Renew writes the handle's owner row and
// nothing else, whatever it holds (issue 21: it rewrote every pending
// record and reply, O(backlog) every 3.3 s); its rows keep lease_until
// 'infinity', which an older replica never takes by lease.
func TestDeliveryRenewWritesOneRow(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	d := newDelivery(t, db, DeliveryOptions{Lease: time.Hour}) // its loop renews nothing during the test
	leaveWork(t, d)
	const n = 500
	recs := make([]sessions.Record, n)
	for i := range recs {
		recs[i] = rec(fmt.Sprintf("b%03d", i))
	}
	_, errs, wait := d.AcceptDeferredAll(ctx, recs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("accept %s: %v", recs[i].ID, err)
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	before := rowVersions(t, db, d.Owner())
	if len(before) != n+3+1 {
		t.Fatalf("%d records and replies held, want %d", len(before), n+3+1)
	}
	var ownerBefore string
	if err := db.pool.QueryRow(ctx, `SELECT xmin::text FROM delivery_owners WHERE owner = $1`, d.Owner()).Scan(&ownerBefore); err != nil {
		t.Errorf("the handle's owner row after open: %v", err)
	}

	if err := d.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	after := rowVersions(t, db, d.Owner())
	var rewritten []string
	for id, v := range before {
		if after[id] != v {
			rewritten = append(rewritten, id)
		}
	}
	if len(rewritten) != 0 {
		slices.Sort(rewritten)
		t.Errorf("Renew rewrote %d of the %d records and replies (%v...); want none: one owner row leases them",
			len(rewritten), len(before), rewritten[:min(3, len(rewritten))])
	}
	var ownerAfter string
	var until time.Time
	if err := db.pool.QueryRow(ctx, `SELECT xmin::text, lease_until FROM delivery_owners WHERE owner = $1`, d.Owner()).
		Scan(&ownerAfter, &until); err != nil {
		t.Fatal(err)
	}
	if ownerAfter == ownerBefore {
		t.Error("Renew did not write the owner row")
	}
	if left := time.Until(until); left < 59*time.Minute || left > time.Hour {
		t.Errorf("owner lease until %v (%v left), want a lease (an hour) from now", until, left)
	}
	var finite int
	if err := db.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM delivery_records WHERE owner = $1 AND state = 'pending'
			AND lease_until IS DISTINCT FROM 'infinity')
		+ (SELECT count(*) FROM delivery_replies WHERE owner = $1 AND lease_until IS DISTINCT FROM 'infinity')`,
		d.Owner()).Scan(&finite); err != nil {
		t.Fatal(err)
	}
	if finite != 0 {
		t.Errorf("%d pending records and replies with a lease_until of their own; want all 'infinity'", finite)
	}
}

// TestDeliveryStoppedOwnerTakenByOwnerLease: the rows of a live handle
// that stopped renewing (its lock held: SIGSTOP, a partition) are taken
// over once its owner row's lease ran out, not before, whatever their own
// lease_until says; one renewal of the owner row keeps all of them.
func TestDeliveryStoppedOwnerTakenByOwnerLease(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &settable{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	owner := newDelivery(t, db, DeliveryOptions{Now: clk.Now, Lease: time.Hour}) // its loop renews nothing
	other := newDelivery(t, db, DeliveryOptions{Now: clk.Now})
	leaveWork(t, owner)
	// The rows' own leases, long past, are not the owner's lease.
	for _, q := range []string{
		`UPDATE delivery_records SET lease_until = $2 WHERE owner = $1 AND state = 'pending'`,
		`UPDATE delivery_replies SET lease_until = $2 WHERE owner = $1`,
	} {
		if _, err := db.pool.Exec(ctx, q, owner.Owner(), clk.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	none := func(when string) {
		t.Helper()
		if recs, err := other.Claim(ctx, 10); err != nil || len(recs) != 0 {
			t.Errorf("%s: Claim = %d records, %v; want none", when, len(recs), err)
		}
		if reps, err := other.ClaimReplies(ctx, 10); err != nil || len(reps) != 0 {
			t.Errorf("%s: ClaimReplies = %d, %v; want none", when, len(reps), err)
		}
		if recs, reps, err := other.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
			t.Errorf("%s: Orphans = %d records, %d replies, %v; want none", when, len(recs), len(reps), err)
		}
	}
	clk.Advance(30 * time.Minute)
	none("within the owner's lease")
	if err := owner.Renew(ctx); err != nil { // until 13:30
		t.Fatal(err)
	}
	clk.Advance(45 * time.Minute) // 13:15: past the lease taken at open, within the renewed one
	none("within the renewed lease")

	clk.Advance(30 * time.Minute) // 13:45: no renewal since 12:30
	recs, err := other.Claim(ctx, 10)
	if ids := recordIDs(recs); err != nil || !slices.Equal(ids, []string{"r2", "r3"}) {
		t.Errorf("Claim after the owner's lease ran out = %v, %v; want r2, r3 (r1 is answered)", ids, err)
	}
	reps, err := other.ClaimReplies(ctx, 10)
	if err != nil || len(reps) != 1 || reps[0].ID != "rp" {
		t.Errorf("ClaimReplies after the owner's lease ran out = %+v, %v; want rp", reps, err)
	}
	if recs, reps, err := other.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
		t.Errorf("Orphans after the claims = %d records, %d replies, %v; want none (all the claimer's)", len(recs), len(reps), err)
	}
}

// recordIDs lists the ids of recs.
func recordIDs(recs []sessions.Record) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

// The release before owner rows (migration 00031) claimed records and
// replies by their own lease_until alone, with these statements
// (delivery_lease.go at f2632fd); its replicas run beside this release's
// during a rolling upgrade.
const (
	oldClaimRecordsSQL = `UPDATE delivery_records r SET owner = $1, lease_until = $3
	FROM (SELECT id FROM delivery_records
		WHERE state = 'pending' AND reply IS NULL AND owner <> $1
			AND (lease_until IS NULL OR lease_until <= $4)
		ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) c
	WHERE r.id = c.id
	RETURNING r.id`
	oldClaimRepliesSQL = `UPDATE delivery_replies r SET owner = $1, lease_until = $3
			FROM (SELECT id FROM delivery_replies
				WHERE owner <> $1 AND (lease_until IS NULL OR lease_until <= $4)
				ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) c
			WHERE r.id = c.id RETURNING r.id`
)

// oldClaim runs one of the old release's claims of up to n rows for
// claimer at now and returns the ids it took.
func oldClaim(t *testing.T, db *DB, sql, claimer string, n int, now time.Time) []string {
	t.Helper()
	rows, err := db.pool.Query(context.Background(), sql, claimer, n, now.Add(DefaultLease), now)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// holdOwnerLock holds owner's advisory lock (delivery_owner.go) on a
// connection of its own until the test ends: a live handle of another
// process.
func holdOwnerLock(t *testing.T, db *DB, owner string) {
	t.Helper()
	conn, err := pgx.ConnectConfig(ctxT(t), db.pool.Config().ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(ctxT(t), `SELECT pg_advisory_lock(hashtextextended($1, 0))`, owner); err != nil {
		t.Fatal(err)
	}
}

// TestDeliveryRollingUpgradeLeases: during a rolling upgrade, a live
// handle of the release before (no owner row, its rows' lease_until
// renewed) keeps its rows until their own lease runs out, then they are
// taken over as before; and the old release's claims never take a live
// handle's rows of this release by lease, however long after they were
// written (their lease is the owner row, which the old release does not
// read).
func TestDeliveryRollingUpgradeLeases(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &settable{t: time.Now().UTC().Truncate(time.Microsecond)}
	oldOwner := uuid.NewString()
	holdOwnerLock(t, db, oldOwner)
	for _, q := range []string{
		`INSERT INTO delivery_records (id, seq, agent_id, session_key, payload, accepted_at, owner, lease_until)
			SELECT id, nextval('delivery_seq'), 'main', 'agent:main:main', '{}', $2, $1, $2::timestamptz + interval '1 minute'
			FROM unnest(ARRAY['old-a', 'old-b']) id`,
		`INSERT INTO delivery_replies (id, seq, records, target, chunks, n_chunks, created_at, owner, lease_until)
			VALUES ('old-rp', nextval('delivery_seq'), '{}', '{}', '["x"]', 1, $2, $1, $2::timestamptz + interval '1 minute')`,
	} {
		if _, err := db.pool.Exec(ctx, q, oldOwner, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fresh := newDelivery(t, db, DeliveryOptions{Now: clk.Now, Lease: time.Hour}) // its loop renews nothing
	mustAccept(t, fresh, "new-a", "new-b")
	if err := fresh.Ready(sessions.Reply{ID: "new-rp", Target: json.RawMessage(`{}`), Chunks: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	claimer := newDelivery(t, db, DeliveryOptions{Now: clk.Now})

	// The old handle's rows, under their own lease: kept.
	if recs, err := claimer.Claim(ctx, 10); err != nil || len(recs) != 0 {
		t.Errorf("Claim under an old-release row's lease = %v, %v; want none", recordIDs(recs), err)
	}
	if recs, reps, err := claimer.Orphans(ctx); err != nil || len(recs)+len(reps) != 0 {
		t.Errorf("Orphans under an old-release row's lease = %d records, %d replies, %v; want none", len(recs), len(reps), err)
	}

	// The old handle stopped renewing: its rows' own lease ran out.
	clk.Advance(2 * time.Minute)
	if recs, err := claimer.Claim(ctx, 1); err != nil || !slices.Equal(recordIDs(recs), []string{"old-a"}) {
		t.Errorf("Claim after an old-release row's lease = %v, %v; want old-a", recordIDs(recs), err)
	}
	recs, reps, err := claimer.Orphans(ctx)
	if err != nil || !slices.Equal(recordIDs(recs), []string{"old-b"}) || len(reps) != 1 || reps[0].ID != "old-rp" {
		t.Errorf("Orphans after an old-release row's lease = %v, %d replies, %v; want old-b and old-rp", recordIDs(recs), len(reps), err)
	}

	// An hour later the old release's claims take nothing of the live
	// handles of this release: they renew their owner rows, not their
	// rows, which the old release would have taken by their lease.
	later := clk.Now().Add(time.Hour)
	if err := fresh.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if got := oldClaim(t, db, oldClaimRecordsSQL, "old-claimer", 100, later); slices.Contains(got, "new-a") || slices.Contains(got, "new-b") {
		t.Errorf("the old release's Claim took %v of a live handle of this release; want none of new-a, new-b", got)
	}
	if got := oldClaim(t, db, oldClaimRepliesSQL, "old-claimer", 100, later); slices.Contains(got, "new-rp") {
		t.Errorf("the old release's ClaimReplies took %v of a live handle of this release; want not new-rp", got)
	}
}

// TestDeliveryCloseReleasesAtOnce: Close ends its owner lease and its
// rows' own leases, so both this release's claims and the old release's
// take its rows at once.
func TestDeliveryCloseReleasesAtOnce(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	closer := db.Delivery(DeliveryOptions{})
	mustAccept(t, closer, "c1", "c2", "c3")
	if err := closer.Ready(sessions.Reply{ID: "cr", Records: []string{"c3"}, Target: json.RawMessage(`{}`), Chunks: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	var until time.Time
	if err := db.pool.QueryRow(ctx, `SELECT lease_until FROM delivery_owners WHERE owner = $1`, closer.Owner()).Scan(&until); err != nil {
		t.Fatal(err)
	}
	if until.After(time.Now()) {
		t.Errorf("a closed handle's owner lease runs until %v, want ended", until)
	}
	if got := oldClaim(t, db, oldClaimRecordsSQL, "old-claimer", 1, time.Now()); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("the old release's Claim of a closed handle's records took %v, want c1", got)
	}
	next := newDelivery(t, db, DeliveryOptions{})
	recs, err := next.Claim(ctx, 10)
	if err != nil || !slices.Equal(recordIDs(recs), []string{"c2"}) {
		t.Errorf("Claim of a closed handle's records = %v, %v; want c2 (c1 the old release's, c3 answered)", recordIDs(recs), err)
	}
	reps, err := next.ClaimReplies(ctx, 10)
	if err != nil || len(reps) != 1 || reps[0].ID != "cr" {
		t.Errorf("ClaimReplies of a closed handle's reply = %+v, %v; want cr", reps, err)
	}
}

// TestDeliveryPruneOwnerRows: Prune deletes the owner rows of dead
// handles expired for a day that hold nothing, and keeps those that hold
// a pending record or a reply, expired recently, or whose handle lives
// (its lock held: stopped, not dead).
func TestDeliveryPruneOwnerRows(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	d := newDelivery(t, db, DeliveryOptions{})
	stopped := "stopped-" + uuid.NewString()
	holdOwnerLock(t, db, stopped)
	for _, q := range []string{
		`INSERT INTO delivery_owners (owner, lease_until) VALUES
			('gone-empty', now() - interval '2 days'), ('gone-done', now() - interval '2 days'),
			('gone-record', now() - interval '2 days'), ('gone-reply', now() - interval '2 days'),
			('gone-recent', now() - interval '1 hour'), ('` + stopped + `', now() - interval '2 days')`,
		`INSERT INTO delivery_records (id, seq, accepted_at, owner, lease_until) VALUES
			('held', nextval('delivery_seq'), now(), 'gone-record', 'infinity')`,
		`INSERT INTO delivery_records (id, seq, state, accepted_at, owner, done_at, done_seq) VALUES
			('finished', nextval('delivery_seq'), 'done', now(), 'gone-done', now(), nextval('delivery_seq'))`,
		`INSERT INTO delivery_replies (id, seq, records, target, chunks, n_chunks, created_at, owner, lease_until)
			VALUES ('rp', nextval('delivery_seq'), '{}', '{}', '["x"]', 1, now(), 'gone-reply', 'infinity')`,
	} {
		if _, err := db.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := db.pool.Query(ctx, `SELECT owner FROM delivery_owners ORDER BY owner`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{d.Owner(), "gone-record", "gone-recent", "gone-reply", stopped}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("owner rows after Prune = %v, want %v (gone-empty and gone-done deleted)", got, want)
	}
}

// TestDeliveryClaimsLockNoOwnerRow: the claims read owner rows without
// locking them: with every owner row locked by another transaction they
// still take what a stopped owner holds, at once, so a claim never waits
// on a renewal nor a renewal on a claim (waiting on rows locked in another
// order deadlocked under replicas: 40P01).
func TestDeliveryClaimsLockNoOwnerRow(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &settable{t: time.Now().UTC()}
	owner := newDelivery(t, db, DeliveryOptions{Now: clk.Now, Lease: time.Hour})
	other := newDelivery(t, db, DeliveryOptions{Now: clk.Now})
	leaveWork(t, owner)
	mustAccept(t, owner, "r4")
	clk.Advance(2 * time.Hour) // the owner stopped renewing
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT owner FROM delivery_owners FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if recs, err := other.Claim(short, 1); err != nil || len(recs) != 1 {
		t.Errorf("Claim beside locked owner rows = %v, %v; want one record", recordIDs(recs), err)
	}
	if reps, err := other.ClaimReplies(short, 10); err != nil || len(reps) != 1 {
		t.Errorf("ClaimReplies beside locked owner rows = %d, %v; want rp", len(reps), err)
	}
	if recs, _, err := other.Orphans(short); err != nil || len(recs) != 2 {
		t.Errorf("Orphans beside locked owner rows = %v, %v; want the two records left", recordIDs(recs), err)
	}
}
