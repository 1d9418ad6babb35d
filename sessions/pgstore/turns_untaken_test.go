package pgstore

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// TestUntakenExpiredLeaseStillFences (issue 22, the replica-restart
// stall): a turn whose lease ran out while nobody took it (the server was
// down: the renewals failed, the outbox mark waited in memory) still
// writes its reply and transcript once the server is back: its token is
// the current one, so no other turn of the session can have run. Before,
// the "ready" mark was refused as expired and dropped, the reply had been
// sent, and its records stayed pending under a live owner that had
// forgotten them: every later message of the session waited behind them.
// Once another holder takes the lease the old token is refused as before
// (TestFencedWritesRefused).
func TestUntakenExpiredLeaseStillFences(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a", TurnTTL: time.Minute})
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	mustAccept(t, a, "r1")
	ha := beginTurn(t, a, "r1")
	if !ha.Held {
		t.Fatal("a's turn not held")
	}
	tr, err := db.Transcript(sidA, transcript.Header{SessionKey: turnKey, AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	// The lease runs out by the database's clock; nobody takes it.
	if _, err := db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() WHERE name = $1`, ha.Fence.Lease); err != nil {
		t.Fatal(err)
	}
	fctx := sessions.WithFence(ctx, ha.Fence)
	if _, err := tr.Append(fctx, text(sessions.RoleAssistant, "the answer")); err != nil {
		t.Errorf("append with the current token of an expired lease: %v", err)
	}
	if err := a.Ready(reply("rp1", "r1")); err != nil {
		t.Errorf("reply with the current token of an expired lease: %v", err)
	}
	var answered int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_records WHERE id = 'r1' AND reply = 'rp1'`).Scan(&answered); err != nil || answered != 1 {
		t.Errorf("r1 answered by the reply: %d, %v; want 1", answered, err)
	}
	if err := a.Sent("rp1", 1); err != nil {
		t.Fatal(err)
	}
	if !isDup(t, a, "r1") {
		t.Error("r1 not done after its reply was sent")
	}
	// Another replica's message of the session runs next, not behind r1.
	mustAccept(t, b, "r2")
	if h := beginTurn(t, b, "r2"); !h.Held || h.Fence.Token <= ha.Fence.Token {
		t.Errorf("b's turn after a's: held %v token %d; want held above %d", h.Held, h.Fence.Token, ha.Fence.Token)
	}
	// And a's token is refused now that b took the lease.
	if _, err := tr.Append(fctx, text(sessions.RoleAssistant, "late")); err == nil {
		t.Error("append with a's token after b took the lease was accepted")
	}
}

// TestRefusedBackloggedReplyReleasesItsRecords (issue 22): a turn's reply
// mark that waited in memory through an outage and is refused once the
// server is back, because another holder took the session's lease
// meanwhile, leaves its records to run again (any replica's Orphans takes
// them), not pending under a live owner that forgot them.
func TestRefusedBackloggedReplyReleasesItsRecords(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a", TurnTTL: time.Minute})
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	var failing atomic.Bool
	a.fault = func(op string) error {
		if failing.Load() {
			return errors.New("connection refused")
		}
		return nil
	}
	mustAccept(t, a, "r1")
	ha := beginTurn(t, a, "r1")
	if !ha.Held {
		t.Fatal("a's turn not held")
	}
	failing.Store(true)
	if err := a.Ready(reply("rp1", "r1")); err != nil {
		t.Fatalf("Ready during the outage = %v, want nil (kept in memory)", err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() WHERE name = $1`, ha.Fence.Lease); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Leases("replica-b").Acquire(ctx, ha.Fence.Lease, time.Minute); err != nil || !ok {
		t.Fatalf("b takes the lease: %v %v", ok, err)
	}
	failing.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for a.Health() != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Health(); err != nil {
		t.Fatalf("a's marks not written after the outage: %v", err)
	}
	recs, _, err := b.Orphans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != "r1" {
		t.Errorf("b's Orphans after a's refused reply = %v, want r1", recs)
	}
	var replies int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_replies`).Scan(&replies); err != nil || replies != 0 {
		t.Errorf("replies stored with the stale token: %d, %v", replies, err)
	}
}
