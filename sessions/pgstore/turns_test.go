package pgstore

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

const turnKey = "agent:main:telegram:group:1" // rec's session

// beginTurn is BeginTurn that fails the test on error.
func beginTurn(t *testing.T, d *Delivery, ids ...string) *sessions.TurnHold {
	t.Helper()
	h, err := d.BeginTurn(ctxT(t), "main", turnKey, ids)
	if err != nil {
		t.Fatalf("BeginTurn(%v): %v", ids, err)
	}
	if h.Held {
		t.Cleanup(h.End)
	}
	return h
}

func reply(id string, records ...string) sessions.Reply {
	return sessions.Reply{ID: id, Records: records, AgentID: "main", SessionKey: turnKey,
		Target: json.RawMessage(`{"chatId":"1"}`), Chunks: []string{"answer"}}
}

// Two replicas each accept a message of one session: the one holding the
// older message runs first, the other waits for its lease, then runs with
// a higher fencing token; WaitTurn wakes when the lease is released.
func TestBeginTurnOrderAndLease(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	mustAccept(t, a, "r1")
	mustAccept(t, b, "r2")

	if h := beginTurn(t, b, "r2"); h.Held || len(h.Gone) != 0 {
		t.Fatalf("b's turn for the newer message: held %v gone %v; want it to wait for a's older one", h.Held, h.Gone)
	}
	ha := beginTurn(t, a, "r1")
	if !ha.Held || ha.Fence.Lease != SessionLease(turnKey) || ha.Fence.Token < 1 {
		t.Fatalf("a's turn: %+v; want held with a fence on %s", ha, SessionLease(turnKey))
	}
	if err := a.Ready(reply("rp1", "r1")); err != nil {
		t.Fatalf("a's reply under its lease: %v", err)
	}
	// r1 is answered, but a still runs the session: b waits for the lease.
	if h := beginTurn(t, b, "r2"); h.Held {
		t.Fatal("b took the session while a held its lease")
	}

	// b's first wait returns once its listener is up (a release before
	// the LISTEN would be missed; the waiters are woken to ask again):
	// CI run 46 released while the listener was still connecting.
	b.WaitTurn(ctxT(t), turnKey, 10*time.Second)
	woke := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		b.WaitTurn(ctxT(t), turnKey, 20*time.Second)
		woke <- time.Since(start)
	}()
	time.Sleep(300 * time.Millisecond)       // b waits (in process: no connection to make)
	if err := a.Sent("rp1", 1); err != nil { // rp1 leaves before b's reply may
		t.Fatal(err)
	}
	ha.End()
	select {
	case d := <-woke:
		t.Logf("WaitTurn woke %s after the release", d)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitTurn did not wake on the lease's release")
	}
	hb := beginTurn(t, b, "r2")
	if !hb.Held || hb.Fence.Token <= ha.Fence.Token {
		t.Fatalf("b's turn after a's: held %v token %d; want held with a token above a's %d", hb.Held, hb.Fence.Token, ha.Fence.Token)
	}
}

// A replica that paused past its lease while another took the session
// writes nothing with its old token: its transcript append and its reply
// are refused with sessions.ErrFenced, and its hold reports the loss.
func TestFencedWritesRefused(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a", TurnTTL: 600 * time.Millisecond})
	mustAccept(t, a, "r1")
	ha := beginTurn(t, a, "r1")
	if !ha.Held {
		t.Fatal("a's turn not held")
	}
	tr, err := db.Transcript(sidA, transcript.Header{SessionKey: turnKey, AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if ha.Fence.Live == nil || !ha.Fence.Live() {
		t.Fatal("a fresh lease is not live")
	}
	fctx := sessions.WithFence(ctx, ha.Fence)
	if _, err := tr.Append(fctx, text(sessions.RoleUser, "under the lease")); err != nil {
		t.Fatalf("append under the lease: %v", err)
	}

	// a "pauses": its lease is taken by another holder (as after expiry).
	if _, err := db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() WHERE name = $1`, ha.Fence.Lease); err != nil {
		t.Fatal(err)
	}
	other, ok, err := db.Leases("replica-b").Acquire(ctx, ha.Fence.Lease, time.Minute)
	if err != nil || !ok || other.Token <= ha.Fence.Token {
		t.Fatalf("another holder's Acquire = %+v, %v, %v", other, ok, err)
	}

	for name, err := range map[string]error{
		"append":      func() error { _, err := tr.Append(fctx, text(sessions.RoleAssistant, "stale")); return err }(),
		"append lazy": func() error { _, err := tr.AppendLazy(fctx, text(sessions.RoleAssistant, "stale")); return err }(),
		"compaction": func() error {
			_, err := tr.AppendCompaction(fctx, sessions.Compaction{Summary: "stale"})
			return err
		}(),
		"reply": a.Ready(reply("rp1", "r1")),
	} {
		if !errors.Is(err, sessions.ErrFenced) {
			t.Errorf("%s with the stale token: %v; want sessions.ErrFenced", name, err)
		}
	}
	h, err := tr.History(ctx)
	if err != nil || len(h) != 1 {
		t.Errorf("transcript after the stale writes: %d messages, %v; want only the one written under the lease", len(h), err)
	}
	var replies int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_replies`).Scan(&replies); err != nil || replies != 0 {
		t.Errorf("replies stored with the stale token: %d, %v", replies, err)
	}
	if err := a.Health(); err != nil {
		t.Errorf("a fenced reply made the journal unhealthy: %v", err)
	}
	select {
	case <-ha.Lost:
		if ha.Fence.Live() {
			t.Error("a lost lease still reports live")
		}
	case <-time.After(10 * time.Second):
		t.Error("the hold did not report its lost lease")
	}
}

// Records another replica took over are reported gone to their former
// owner, which must drop them.
func TestBeginTurnGone(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	clk := &settable{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	a := newDelivery(t, db, DeliveryOptions{Now: clk.Now, Holder: "replica-a"})
	b := newDelivery(t, db, DeliveryOptions{Now: clk.Now, Holder: "replica-b"})
	mustAccept(t, a, "r1", "r2")
	clk.Advance(DefaultLease * 2) // a stopped: its lease on the records ran out
	recs, _, err := b.Orphans(ctxT(t))
	if err != nil || len(recs) != 2 {
		t.Fatalf("b's take-over: %d records, %v", len(recs), err)
	}
	h := beginTurn(t, a, "r1", "r2")
	if h.Held || len(h.Gone) != 2 {
		t.Errorf("a's turn over records b took: held %v gone %v; want both gone", h.Held, h.Gone)
	}
	if h := beginTurn(t, b, "r1", "r2"); !h.Held || len(h.Gone) != 0 {
		t.Errorf("b's turn: held %v gone %v; want held", h.Held, h.Gone)
	}
}

// A replica whose owner lock connection dropped while it lived has its
// records taken over by another, but it still holds the session's lease
// and finishes the turn: its reply claims the records back, and the
// other replica, when its turn comes, finds them answered (gone) instead
// of answering them a second time.
func TestLeaseHolderAnswersTakenRecords(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	mustAccept(t, a, "r1")
	ha := beginTurn(t, a, "r1")
	if !ha.Held {
		t.Fatal("a's turn not held")
	}
	if _, err := db.pool.Exec(ctx, `UPDATE delivery_records SET owner = $1 WHERE id = 'r1'`, b.Owner()); err != nil {
		t.Fatal(err)
	}
	if h := beginTurn(t, b, "r1"); h.Held {
		t.Fatal("b ran the session while a held its lease")
	}
	if err := a.Ready(reply("rp1", "r1")); err != nil {
		t.Fatalf("a's reply under its lease: %v", err)
	}
	ha.End()
	if h := beginTurn(t, b, "r1"); len(h.Gone) != 1 {
		t.Errorf("b's turn over the answered record: held %v gone %v; want r1 gone", h.Held, h.Gone)
	}
	var owner string
	if err := db.pool.QueryRow(ctx, `SELECT owner FROM delivery_records WHERE id = 'r1'`).Scan(&owner); err != nil || owner != a.Owner() {
		t.Errorf("r1's owner after a's reply = %q, %v; want a", owner, err)
	}
}

// The session lease of a replica that died (its owner lock went with its
// connection) is taken at once, without waiting for it to expire.
func TestDeadHoldersLeaseTakenAtOnce(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	a := db.Delivery(DeliveryOptions{Holder: "replica/a"}) // a '/' in a replica id is fine
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	mustAccept(t, a, "r0")
	mustAccept(t, b, "r1")
	ha, err := a.BeginTurn(ctxT(t), "main", turnKey, []string{"r0"})
	if err != nil || !ha.Held {
		t.Fatalf("a's turn: %+v, %v", ha, err)
	}
	if h := beginTurn(t, b, "r1"); h.Held {
		t.Fatal("b took the session from a live holder")
	}
	a.lock.drop() // a dies: its connection, and its owner lock, are gone
	// The server drops the lock a moment after the connection closes.
	var taken int
	for deadline := time.Now().Add(10 * time.Second); taken == 0 && time.Now().Before(deadline); {
		recs, _, err := b.Orphans(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if taken = len(recs); taken == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if taken != 1 {
		t.Fatalf("b's take-over of a's record: %d", taken)
	}
	if h := beginTurn(t, b, "r0", "r1"); !h.Held || h.Fence.Token <= ha.Fence.Token {
		t.Errorf("b's turn after a died: held %v token %d; want held above %d at once", h.Held, h.Fence.Token, ha.Fence.Token)
	}
	ha.End()
	_ = a.Close()
}

// A batch with messages on both sides of another replica's message runs
// only the older part now; the newer waits for the other replica's turn.
func TestBeginTurnHoldsBackLater(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	mustAccept(t, a, "r1")
	mustAccept(t, b, "r2")
	mustAccept(t, a, "r3")
	h := beginTurn(t, a, "r1", "r3")
	if !h.Held || len(h.Later) != 1 || h.Later[0] != "r3" {
		t.Fatalf("a's turn over r1 and r3 around b's r2: held %v later %v; want held with r3 later", h.Held, h.Later)
	}
	if err := a.Ready(reply("rp1", "r1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sent("rp1", 1); err != nil {
		t.Fatal(err)
	}
	h.End()
	if h := beginTurn(t, a, "r3"); h.Held {
		t.Fatal("a ran r3 before b's older r2")
	}
	hb := beginTurn(t, b, "r2")
	if !hb.Held || len(hb.Later) != 0 {
		t.Fatalf("b's turn: held %v later %v", hb.Held, hb.Later)
	}
}

// A solo daemon's journal (the only daemon on its database) grants every
// turn at once, without a lease.
func TestBeginTurnSolo(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := newDelivery(t, db, DeliveryOptions{Solo: true})
	mustAccept(t, d, "r1")
	h := beginTurn(t, d, "r1")
	if !h.Held || h.Fence.Lease != "" || len(h.Gone)+len(h.Later) != 0 {
		t.Fatalf("solo turn: %+v; want held without a fence", h)
	}
	h.End()
	var n int
	if err := db.pool.QueryRow(ctxT(t), `SELECT count(*) FROM leases`).Scan(&n); err != nil || n != 0 {
		t.Errorf("leases after a solo turn: %d, %v; want none", n, err)
	}
}

// A batch newer than one of this replica's own pending messages of the
// session (taken over, or requeued, and waiting in the lane behind it) is
// told to let that one run first.
func TestBeginTurnBehindOwnOlder(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	mustAccept(t, a, "r1", "r2")
	if h := beginTurn(t, a, "r2"); h.Held || !h.Behind {
		t.Fatalf("turn over r2 with r1 pending: held %v behind %v; want behind", h.Held, h.Behind)
	}
	if h := beginTurn(t, a, "r1"); !h.Held || h.Behind {
		t.Fatalf("turn over r1: held %v behind %v; want held", h.Held, h.Behind)
	}
}
