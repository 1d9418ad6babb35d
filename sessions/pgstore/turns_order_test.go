package pgstore

import (
	"testing"
	"time"
)

// The attack of issue 22 item 7: a replica answered seq 9, stored its
// reply and was killed before sending it; another replica then ran seq 10
// and sent its reply before the take-over sent seq 9's. A turn now waits
// while an older record's reply is another handle's to send, alive or
// dead, and while this handle sends it after taking it over.
func TestKilledReplicasReplyLeavesBeforeNewerTurn(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	a := db.Delivery(DeliveryOptions{Holder: "replica-a"})
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	mustAccept(t, a, "r9")
	ha, err := a.BeginTurn(ctxT(t), "main", turnKey, []string{"r9"})
	if err != nil || !ha.Held {
		t.Fatalf("a's turn: %+v, %v", ha, err)
	}
	if err := a.Ready(reply("rp9", "r9")); err != nil {
		t.Fatal(err)
	}
	ha.End()
	mustAccept(t, b, "r10")
	// a lives and has not sent rp9 yet: b's newer turn waits.
	if h := beginTurn(t, b, "r10"); h.Held {
		t.Fatal("b ran seq 10 while a's reply to seq 9 was unsent")
	}
	a.lock.drop() // a is killed with rp9 unsent
	if h := beginTurn(t, b, "r10"); h.Held {
		t.Fatal("b ran seq 10 while the dead a's reply to seq 9 was unsent (it would leave before rp9)")
	}
	var replies int
	for deadline := time.Now().Add(10 * time.Second); replies == 0 && time.Now().Before(deadline); {
		_, reps, err := b.Orphans(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if replies = len(reps); replies == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if replies != 1 {
		t.Fatalf("b's take-over of a's reply: %d", replies)
	}
	// rp9 is b's now, sent outside the session's turns: the turn waits
	// until it was.
	if h := beginTurn(t, b, "r10"); h.Held {
		t.Fatal("b ran seq 10 while the reply to seq 9 it took over was unsent")
	}
	if err := b.Sent("rp9", 1); err != nil {
		t.Fatal(err)
	}
	if h := beginTurn(t, b, "r10"); !h.Held {
		t.Fatalf("b's turn once rp9 was sent: %+v; want held", h)
	}
	_ = a.Close()
}

// A live replica's reply to an older record gates the next turn only
// until it is sent.
func TestOlderReplySentThenNewerTurnRuns(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	b := newDelivery(t, db, DeliveryOptions{Holder: "replica-b"})
	mustAccept(t, a, "r1")
	ha := beginTurn(t, a, "r1")
	if err := a.Ready(reply("rp1", "r1")); err != nil {
		t.Fatal(err)
	}
	ha.End()
	mustAccept(t, b, "r2")
	if h := beginTurn(t, b, "r2"); h.Held {
		t.Fatal("b ran r2 before a sent its reply to r1")
	}
	if err := a.Sent("rp1", 1); err != nil {
		t.Fatal(err)
	}
	db.writes.barrier() // a's mark is committed (Sent does not wait for it)
	if h := beginTurn(t, b, "r2"); !h.Held {
		t.Fatalf("b's turn after rp1 was sent: %+v; want held", h)
	}
}

// The attack behind TestReplicasWebhookFailover's "context n's out of
// order" (27 31 32, then 28 29 30): a replica took over a stopped one's
// records 27 to 30, its lane merged the oldest of them with its own newer
// 31 and 32 into one batch, and that batch ran before 28 to 30. The newer
// part of such a batch is held back behind the records it skipped.
func TestBatchSkippingOwnPendingRecordsHoldsBackNewer(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	a := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	mustAccept(t, a, "r27", "r28", "r29", "r30", "r31", "r32")
	h := beginTurn(t, a, "r27", "r31", "r32")
	if !h.Held || len(h.Later) != 2 || h.Later[0] != "r31" || h.Later[1] != "r32" {
		t.Fatalf("turn over r27, r31, r32 with r28-r30 pending: held %v later %v; want held with r31, r32 later", h.Held, h.Later)
	}
	if err := a.Done("r27"); err != nil {
		t.Fatal(err)
	}
	h.End()
	if h := beginTurn(t, a, "r31", "r32"); h.Held || !h.Behind {
		t.Fatalf("turn over r31, r32 with r28-r30 pending: held %v behind %v; want behind", h.Held, h.Behind)
	}
	if h := beginTurn(t, a, "r28", "r29", "r30"); !h.Held || len(h.Later) != 0 {
		t.Fatalf("turn over r28-r30: held %v later %v; want all now", h.Held, h.Later)
	}
}
