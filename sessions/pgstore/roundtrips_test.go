package pgstore

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// opCounts reads the counters of ops: op → {round trips, commits}.
func opCounts(db *DB, ops ...string) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, s := range db.OpStats() {
		for _, op := range ops {
			if s.Op == op {
				out[op] = [2]int64{s.RoundTrips, s.Commits}
			}
		}
	}
	return out
}

// TestOpStats: a known sequence of backend operations shows in the
// counters as round trips and commits of each: a statement outside a
// transaction is one of each, a batch one of each whatever it holds, a
// transaction of several statements as many round trips and one commit,
// and a write refused by the server a round trip without a commit.
func TestOpStats(t *testing.T) {
	db, _ := openTest(t)
	ctx := ctxT(t)
	// A long lease: no renewal of the background loops falls inside.
	d := newDelivery(t, db, DeliveryOptions{Lease: time.Hour, TurnTTL: time.Hour})
	x := db.Index("main", idle)
	key := mustKey(t, "main", "telegram", "1")
	if _, _, err := x.Begin(ctx, key, sessions.Origin{}); err != nil {
		t.Fatal(err)
	}
	// Each statement runs once before the measured sequence, so that
	// none pays its first-use preparation inside it (not counted anyway).
	mustAccept(t, d, "warm")
	if err := d.Done("warm"); err != nil {
		t.Fatal(err)
	}
	ops := []string{OpAccept, OpAcceptWait, OpReady, OpSent, OpDone, OpBeginTurn, OpLease, OpIndex}
	before := opCounts(db, ops...)

	mustAccept(t, d, "a") // one INSERT outside a transaction
	dup, wait, err := d.AcceptDeferred(ctx, rec("b"))
	if err != nil || dup {
		t.Fatalf("AcceptDeferred = %v, %v", dup, err)
	}
	if err := wait(); err != nil { // one flush
		t.Fatal(err)
	}
	h, err := d.BeginTurn(ctx, "main", rec("a").SessionKey, []string{"a"})
	if err != nil || !h.Held {
		t.Fatalf("BeginTurn = %+v, %v", h, err)
	}
	reply := sessions.Reply{ID: "r1", Records: []string{"a"}, AgentID: "main", SessionKey: rec("a").SessionKey,
		Target: json.RawMessage(`{}`), Chunks: []string{"one", "two"}}
	if err := d.Ready(reply); err != nil { // the fence, the reply, its records: one batch
		t.Fatal(err)
	}
	// Sent does not wait for its mark: each is let land alone (barrier)
	// so that it is counted under its own operation, not a group's.
	if err := d.Sent("r1", 1); err != nil {
		t.Fatal(err)
	}
	db.writes.barrier()
	if err := d.Sent("r1", 2); err != nil { // the last mark finishes the records in the same batch
		t.Fatal(err)
	}
	db.writes.barrier()
	h.End() // releases the lease
	if err := d.Done("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Patch(ctx, key, func(e *sessions.Entry) error { e.Label = "x"; return nil }); err != nil {
		t.Fatal(err) // BEGIN, SELECT ... FOR UPDATE, UPDATE, COMMIT
	}
	// A turn's write after its lease moved on: refused by the fence, so
	// the batch's round trip commits nothing.
	h2, err := d.BeginTurn(ctx, "main", "agent:main:telegram:group:2", nil)
	if err != nil || !h2.Held {
		t.Fatalf("BeginTurn = %+v, %v", h2, err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE leases SET token = token + 1 WHERE name = $1`, h2.Fence.Lease); err != nil {
		t.Fatal(err)
	}
	stale := sessions.Reply{ID: "r2", AgentID: "main", SessionKey: "agent:main:telegram:group:2", Target: json.RawMessage(`{}`),
		Chunks: []string{"late"}}
	if err := d.Ready(stale); !errors.Is(err, sessions.ErrFenced) {
		t.Fatalf("Ready after the lease moved on = %v, want ErrFenced", err)
	}
	h2.End() // its release finds the lease moved on: a statement that commits

	after := opCounts(db, ops...)
	got := map[string][2]int64{}
	for op, n := range after {
		if d := [2]int64{n[0] - before[op][0], n[1] - before[op][1]}; d != [2]int64{} {
			got[op] = d
		}
	}
	want := map[string][2]int64{
		OpAccept:     {2, 2},
		OpAcceptWait: {1, 1},
		OpBeginTurn:  {2, 2},
		OpReady:      {2, 1},
		OpSent:       {2, 2},
		OpLease:      {2, 2},
		OpDone:       {1, 1},
		OpIndex:      {4, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trips and commits by operation (-want +got):\n%s", diff)
	}
}

// TestVerb: the first word of a statement, whatever precedes it.
func TestVerb(t *testing.T) {
	for sql, want := range map[string]string{
		"COMMIT": "COMMIT", " commit": "COMMIT", "\n\tBEGIN ISOLATION LEVEL SERIALIZABLE": "BEGIN",
		"SELECT 1": "SELECT", ";end": "END", "": "", "WITH x AS (SELECT 1) SELECT * FROM x": "WITH",
	} {
		if got := verb(sql); got != want {
			t.Errorf("verb(%q) = %q, want %q", sql, got, want)
		}
	}
}
