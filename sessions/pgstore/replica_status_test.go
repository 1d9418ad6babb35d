package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestReplicaStatus: a replica's status counts the leader roles and the
// session leases it holds (not another holder's, not expired ones), and
// the unclaimed ingress: pending records of a dead owner or of a live one
// whose lease ran out, not those of a live owner nor answered or finished
// ones, with the age of the oldest.
func TestReplicaStatus(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	b, err := OpenBackend(ctx, BackendOptions{Options: Options{URL: url, Logger: zaptest.NewLogger(t)}, ReplicaID: "replica-a", Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	st, err := b.ReplicaStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.ReplicaID != "replica-a" || len(st.LeaderRoles) != 0 || st.LeaderRoles == nil || st.SessionLeases != 0 ||
		st.Ingress != (IngressLag{}) {
		t.Errorf("empty database: status %+v, want replica-a, no leases (an empty list), no lag", st)
	}

	// Leader roles are held under the replica id, session leases under
	// "<replica id>/<owner id>" (turns.go).
	mine, myTurns, myOtherTurns := db.Leases("replica-a"), db.Leases("replica-a/owner-1"), db.Leases("replica-a/owner-2")
	others, otherTurns := db.Leases("replica-b"), db.Leases("replica-ab/owner-3")
	nested := db.Leases("replica-a/x/owner-4") // replica "replica-a/x"'s
	for _, l := range []struct {
		h    *Leases
		name string
		ttl  time.Duration
	}{
		{mine, "telegram:default", time.Minute},
		{mine, "discord:default", time.Minute},
		{myTurns, SessionLease("agent:main:telegram:direct:1"), time.Minute},
		{myOtherTurns, SessionLease("agent:main:telegram:direct:2"), time.Minute},
		{myTurns, SessionLease("agent:main:telegram:direct:3"), time.Millisecond}, // expires at once
		{others, "telegram:other", time.Minute},
		{otherTurns, SessionLease("agent:main:telegram:direct:4"), time.Minute},
		{nested, SessionLease("agent:main:telegram:direct:5"), time.Minute},
	} {
		if _, ok, err := l.h.Acquire(ctx, l.name, l.ttl); err != nil || !ok {
			t.Fatalf("acquire %s: %v %v", l.name, ok, err)
		}
	}

	live := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, live, "live-1", "live-2")
	dead := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, dead, "dead-1", "dead-2", "dead-done")
	if err := dead.Done("dead-done"); err != nil {
		t.Fatal(err)
	}
	stalled := newDelivery(t, db, DeliveryOptions{Lease: time.Hour}) // its loop renews no lease during the test
	mustAccept(t, stalled, "stalled-1")
	// Each handle takes its owner lock (Orphans does first) while all
	// live, so none takes another's records.
	for _, d := range []*Delivery{dead, live, stalled} {
		if recs, _, err := d.Orphans(ctx); err != nil || len(recs) != 0 {
			t.Fatalf("Orphans while all live = %d records, %v", len(recs), err)
		}
	}
	dead.lock.drop() // the process died: its lock connection ended
	// The stalled handle stopped renewing a minute ago (SIGSTOP): its
	// lock is held, its lease (its owner row) ran out. The oldest record
	// is dead-1, an hour old.
	if _, err := db.pool.Exec(ctx, `UPDATE delivery_owners SET lease_until = clock_timestamp() - interval '1 minute'
		WHERE owner = $1`, stalled.Owner()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE delivery_records SET accepted_at = clock_timestamp() - interval '1 hour'
		WHERE id = 'dead-1'`); err != nil {
		t.Fatal(err)
	}

	// The server drops the dead owner's lock a moment after its
	// connection closes (at once, unless the machine is loaded).
	waitFor(t, 10*time.Second, func() bool {
		st, err = b.ReplicaStatus(ctx)
		return err != nil || st.Ingress.Unclaimed >= 3
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"discord:default", "telegram:default"}; !slices.Equal(st.LeaderRoles, want) {
		t.Errorf("leader roles %v, want %v", st.LeaderRoles, want)
	}
	if st.SessionLeases != 2 {
		t.Errorf("session leases %d, want 2 (the expired one, replica-ab's and replica-a/x's not counted)", st.SessionLeases)
	}
	if st.Ingress.Unclaimed != 3 {
		t.Errorf("unclaimed %d, want 3 (dead-1, dead-2, stalled-1)", st.Ingress.Unclaimed)
	}
	if age := st.Ingress.OldestAge; age < time.Hour || age > time.Hour+time.Minute {
		t.Errorf("oldest unclaimed age %s, want about 1h", age)
	}
	lag, err := b.IngressLag(ctx)
	if err != nil || lag.Unclaimed != st.Ingress.Unclaimed || lag.OldestAge < time.Hour {
		t.Errorf("IngressLag = %+v, %v; want %+v", lag, err, st.Ingress)
	}

	// A running replica takes them over: they are claimed again.
	if recs, _, err := live.Orphans(ctx); err != nil || len(recs) != 3 {
		t.Fatalf("Orphans = %d records, %v; want dead-1, dead-2 and stalled-1", len(recs), err)
	}
	if lag, err := b.IngressLag(ctx); err != nil || lag != (IngressLag{}) {
		t.Errorf("after the take-over: %+v, %v; want none", lag, err)
	}

	// A database that does not answer is an error naming the operation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.ReplicaStatus(cctx); err == nil {
		t.Error("ReplicaStatus with a cancelled context: no error")
	}
}

// BenchmarkReplicaStatus: one scrape's read of the replica gauges on a
// busy database: 100,000 finished records, 1,000 pending ones of a live
// owner, 100 of a dead one, 200 session leases and 2 leader roles of this
// replica among 400 leases.
func BenchmarkReplicaStatus(b *testing.B) {
	url := pgtest.NewDatabase(b)
	ctx := context.Background()
	be, err := OpenBackend(ctx, BackendOptions{Options: Options{URL: url, Logger: zap.NewNop()}, ReplicaID: "replica-a", Passive: true})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	live := be.db.Delivery(DeliveryOptions{})
	defer live.Close()
	if _, _, err := live.Orphans(ctx); err != nil { // takes its owner lock
		b.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO delivery_records (id, seq, state, accepted_at, owner, done_at, done_seq)
			SELECT 'done-' || i, nextval('delivery_seq'), 'done', now(), 'gone', now(), nextval('delivery_seq')
			FROM generate_series(1, 100000) i`,
		`INSERT INTO delivery_records (id, seq, accepted_at, owner, lease_until)
			SELECT 'live-' || i, nextval('delivery_seq'), now(), '` + live.Owner() + `', now() + interval '1 hour'
			FROM generate_series(1, 1000) i`,
		`INSERT INTO delivery_records (id, seq, accepted_at, owner, lease_until)
			SELECT 'dead-' || i, nextval('delivery_seq'), now(), 'dead-owner', now() + interval '1 hour'
			FROM generate_series(1, 100) i`,
		`INSERT INTO leases (name, holder, token, acquired_at, expires_at)
			SELECT 'session:agent:main:telegram:direct:' || i, CASE WHEN i % 2 = 0 THEN 'replica-a/o' ELSE 'replica-b/o' END,
				1, now(), now() + interval '1 hour'
			FROM generate_series(1, 400) i`,
		`INSERT INTO leases (name, holder, token, acquired_at, expires_at) VALUES
			('telegram:default', 'replica-a', 1, now(), now() + interval '1 hour'),
			('discord:default', 'replica-a', 1, now(), now() + interval '1 hour')`,
		`ANALYZE`,
	} {
		if _, err := be.db.pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		st, err := be.ReplicaStatus(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Ingress.Unclaimed != 100 || st.SessionLeases != 200 || len(st.LeaderRoles) != 2 {
			b.Fatalf("status %+v", st)
		}
	}
}

func TestLeaseNames(t *testing.T) {
	for _, tc := range []struct {
		name, holder, replica string
		session               bool
	}{
		{"telegram:default", "gw-1", "gw-1", false},
		{SessionLease("agent:main:main"), "gw-1/0b6f", "gw-1", true},
		{SessionLease("agent:main:main"), "gw/1/0b6f", "gw/1", true},
		{"discord:main", "gw/1", "gw/1", false},
		{SessionLease("agent:main:main"), "0b6f", "0b6f", true}, // a handle without a replica id
	} {
		if got := IsSessionLease(tc.name); got != tc.session {
			t.Errorf("IsSessionLease(%q) = %v", tc.name, got)
		}
		if got := LeaseReplica(tc.name, tc.holder); got != tc.replica {
			t.Errorf("LeaseReplica(%q, %q) = %q, want %q", tc.name, tc.holder, got, tc.replica)
		}
	}
}
