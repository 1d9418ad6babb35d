package pgstore

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap/zaptest"
)

// TestReplicas: daemons register with a heartbeat (a passive CLI does
// not), list with the leases they hold, and deregister when closed.
func TestReplicas(t *testing.T) {
	_, url := openTest(t)
	ctx := ctxT(t)
	open := func(o BackendOptions) *Backend {
		o.Options = Options{URL: url, Logger: zaptest.NewLogger(t)}
		b, err := OpenBackend(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	named := open(BackendOptions{ReplicaID: "replica-a"})
	anon := open(BackendOptions{})
	defer anon.Close()
	cli := open(BackendOptions{Passive: true})
	defer cli.Close()
	if named.ReplicaID() != "replica-a" {
		t.Errorf("ReplicaID = %q", named.ReplicaID())
	}
	if _, err := uuid.Parse(anon.ReplicaID()); err != nil {
		t.Errorf("default replica id %q is not a UUID: %v", anon.ReplicaID(), err)
	}

	var reps []Replica
	waitFor(t, 5*time.Second, func() bool {
		var err error
		reps, err = cli.Replicas(ctx)
		return err == nil && len(reps) == 2
	})
	host, _ := os.Hostname()
	ids := map[string]bool{}
	for _, r := range reps {
		ids[r.ID] = true
		if r.Host != host || r.PID != os.Getpid() || r.Version == "" || r.StartedAt.IsZero() || r.Stale() {
			t.Errorf("replica %+v: want this host and pid, a version, fresh", r)
		}
	}
	if !ids["replica-a"] || !ids[anon.ReplicaID()] || ids[cli.ReplicaID()] {
		t.Errorf("replicas %v: want replica-a and %s, not the passive %s", ids, anon.ReplicaID(), cli.ReplicaID())
	}

	// A leader role shows in Leases under its holder.
	lctx, stop := context.WithCancel(ctx)
	led := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- named.RunLeader(lctx, "telegram:main", func(ctx context.Context) error {
			close(led)
			<-ctx.Done()
			return nil
		})
	}()
	<-led
	ls, err := cli.Leases(ctx)
	if err != nil || len(ls) != 1 || ls[0].Name != "telegram:main" || ls[0].Holder != "replica-a" ||
		ls[0].Remaining() <= 0 || ls[0].Remaining() > DefaultLeaderTTL {
		t.Errorf("Leases = %+v %v, want telegram:main held by replica-a", ls, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ls, err := cli.Leases(ctx); err != nil || len(ls) != 0 {
		t.Errorf("after the role stopped: Leases = %+v %v, want none", ls, err)
	}

	// A replica not seen for three heartbeats is stale.
	if _, err := cli.db.pool.Exec(ctx, `UPDATE replicas SET seen_at = seen_at - interval '1 minute' WHERE id = $1`, anon.ReplicaID()); err != nil {
		t.Fatal(err)
	}
	if err := named.Close(); err != nil {
		t.Fatal(err)
	}
	reps, err = cli.Replicas(ctx)
	if err != nil || len(reps) != 1 || reps[0].ID != anon.ReplicaID() || !reps[0].Stale() {
		t.Errorf("after close: %+v %v, want only %s, stale", reps, err, anon.ReplicaID())
	}
}

// TestSoloLeaderRunsAtOnce (issue 21): a solo backend (its daemon holds the
// exclusive daemon lock) runs a leader role at once although the role's
// lease is still held by its SIGKILLed predecessor (another replica id,
// unexpired): a restarted daemon polls again without waiting the lease out.
func TestSoloLeaderRunsAtOnce(t *testing.T) {
	db, url := openTest(t)
	ctx := ctxT(t)
	if _, err := db.pool.Exec(ctx, `INSERT INTO leases (name, holder, token, acquired_at, expires_at)
		VALUES ('telegram:default', 'dead-predecessor', 7, clock_timestamp(), clock_timestamp() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBackend(ctx, BackendOptions{Options: Options{URL: url, Logger: zaptest.NewLogger(t)}, Solo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lctx, stop := context.WithCancel(ctx)
	led := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.RunLeader(lctx, "telegram:default", func(ctx context.Context) error {
			close(led)
			<-ctx.Done()
			return nil
		})
	}()
	select {
	case <-led:
	case <-time.After(DefaultLeaderTTL / 2):
		t.Fatal("the solo daemon's role waited for its predecessor's lease")
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("RunLeader after ctx ended = %v, want nil", err)
	}
}
