package pgstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestDeliverySentDoesNotWaitForItsCommit: Sent hands its mark to the
// group commit and returns without waiting for the commit (issue 21: the
// wait held the session's lane and a turn slot), and this handle's reads
// wait for it: while another transaction holds the reply's row, Sent
// returns; once the row is free, Replies no longer lists the reply and its
// record is done.
func TestDeliverySentDoesNotWaitForItsCommit(t *testing.T) {
	t.Parallel()
	db, d, release := lockedReply(t, "x")
	ctx := ctxT(t)
	sent := make(chan error, 1)
	go func() { sent <- d.Sent("rp", 1) }()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("Sent: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sent waited for the reply's row, held by another transaction")
	}
	release()
	if rs, err := d.Replies(); err != nil || len(rs) != 0 {
		t.Fatalf("Replies after Sent = %+v, %v; want none", rs, err)
	}
	var state string
	if err := db.pool.QueryRow(ctx, `SELECT state FROM delivery_records WHERE id = 'a'`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "done" {
		t.Errorf("record a is %s after its reply was sent, want done", state)
	}
}

// TestDeliverySentWaitsWhileChunksRemain: the mark of a chunk that is
// not a reply's last is committed before Sent returns: the next chunk goes
// out right after it, and a mark lost behind it would have a crash send
// both again (TestCrashLosesNothingRepeatsNothingPostgres found chunks
// delivered twice that were not the last thing sent to their chat).
func TestDeliverySentWaitsWhileChunksRemain(t *testing.T) {
	t.Parallel()
	db, d, release := lockedReply(t, "x", "y")
	ctx := ctxT(t)
	sent := make(chan error, 1)
	go func() { sent <- d.Sent("rp", 1) }()
	select {
	case err := <-sent:
		t.Fatalf("Sent of the first of two chunks returned (%v) while its mark could not be written", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if err := <-sent; err != nil {
		t.Fatalf("Sent: %v", err)
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT sent FROM delivery_replies WHERE id = 'rp'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("reply's sent count after Sent returned = %d, %v; want 1", n, err)
	}
}

// lockedReply stores reply "rp" of chunks, answering record "a", and has
// another transaction hold its row (rolled back by release) so that no
// mark of it can be written meanwhile.
func lockedReply(t *testing.T, chunks ...string) (db *DB, d *Delivery, release func()) {
	t.Helper()
	db, _ = openTest(t)
	ctx := ctxT(t)
	d = newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, d, "a")
	if err := d.Ready(sessions.Reply{ID: "rp", Records: []string{"a"}, AgentID: "main",
		SessionKey: "agent:main:telegram:group:1", Target: json.RawMessage(`{}`), Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM delivery_replies WHERE id = 'rp' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return db, d, func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
