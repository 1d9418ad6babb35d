package pgstore

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestForgottenReplicaRegistersAgain: a replica whose row was removed
// while it lived (it was paused longer than forgetReplicasAfter and
// another replica forgot it, or an operator cleared the table) registers
// again at its next heartbeat; before, every heartbeat failed with "not
// registered" for the rest of its life and `gateway doctor` never listed
// it.
func TestForgottenReplicaRegistersAgain(t *testing.T) {
	_, url := openTest(t)
	ctx := ctxT(t)
	b, err := OpenBackend(ctx, BackendOptions{Options: Options{URL: url, Logger: zaptest.NewLogger(t)}, ReplicaID: "replica-f"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	listed := func() bool {
		reps, err := b.Replicas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(reps) == 1 && reps[0].ID == "replica-f"
	}
	waitFor(t, 5*time.Second, listed)
	if _, err := b.db.pool.Exec(ctx, `DELETE FROM replicas WHERE id = 'replica-f'`); err != nil {
		t.Fatal(err)
	}
	// Two heartbeats' time and a margin: the next one must put it back.
	waitFor(t, 3*HeartbeatEvery, listed)
}
