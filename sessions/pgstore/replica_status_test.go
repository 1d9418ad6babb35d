package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
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

	mine, others := db.Leases("replica-a"), db.Leases("replica-b")
	for _, l := range []struct {
		h    *Leases
		name string
		ttl  time.Duration
	}{
		{mine, "telegram:default", time.Minute},
		{mine, "discord:default", time.Minute},
		{mine, "session:main:agent:main:telegram:direct:1", time.Minute},
		{mine, "session:main:agent:main:telegram:direct:2", time.Minute},
		{mine, "session:main:agent:main:telegram:direct:3", time.Millisecond}, // expires at once
		{others, "telegram:other", time.Minute},
		{others, "session:main:agent:main:telegram:direct:4", time.Minute},
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
	stalled := newDelivery(t, db, DeliveryOptions{})
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
	// lock is held, its lease ran out. The oldest record is dead-1, an
	// hour old.
	if _, err := db.pool.Exec(ctx, `UPDATE delivery_records SET lease_until = clock_timestamp() - interval '1 minute'
		WHERE id = 'stalled-1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE delivery_records SET accepted_at = clock_timestamp() - interval '1 hour'
		WHERE id = 'dead-1'`); err != nil {
		t.Fatal(err)
	}

	st, err = b.ReplicaStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"discord:default", "telegram:default"}; !slices.Equal(st.LeaderRoles, want) {
		t.Errorf("leader roles %v, want %v", st.LeaderRoles, want)
	}
	if st.SessionLeases != 2 {
		t.Errorf("session leases %d, want 2 (the expired one and another holder's not counted)", st.SessionLeases)
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

	// A running replica takes the dead owner's records over: they are
	// claimed again.
	if recs, _, err := live.Orphans(ctx); err != nil || len(recs) != 2 {
		t.Fatalf("Orphans = %d records, %v; want dead-1 and dead-2", len(recs), err)
	}
	if lag, err := b.IngressLag(ctx); err != nil || lag.Unclaimed != 1 || lag.OldestAge > time.Minute {
		t.Errorf("after the take-over: %+v, %v; want stalled-1 alone", lag, err)
	}

	// A database that does not answer is an error naming the operation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.ReplicaStatus(cctx); err == nil {
		t.Error("ReplicaStatus with a cancelled context: no error")
	}
}
