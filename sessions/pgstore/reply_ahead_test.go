package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// ahead is a ReplyAhead into d of reply rp (its entry id the append's)
// with one usage row.
func ahead(d sessions.Delivery, rp sessions.Reply) *sessions.ReplyAhead {
	return &sessions.ReplyAhead{Journal: d, Build: func(entryID string) (sessions.Reply, []sessions.UsageRow) {
		r := rp
		r.EntryID = entryID
		return r, []sessions.UsageRow{{At: time.UnixMilli(1_800_000_000_000).UTC(), AgentID: "main", SessionKey: turnKey,
			SessionID: sidA, EntryID: entryID, Provider: "fake", Model: "m", Input: 3, Output: 4}}
	}}
}

// appendTrips is the round trips of every operation of db so far.
func appendTrips(db *DB) int64 {
	var n int64
	for _, s := range db.OpStats() {
		n += s.RoundTrips
	}
	return n
}

// TestReplyAheadCommitsWithTheAnswer (issue 21): a turn's final answer
// appended with its ReplyAhead stores the reply (its records answered)
// and the usage row in the append's transaction, in the append's one
// round trip; the reply is taken with the entry's id, and a start after
// the process stopped finds it in the outbox, answering its record, as a
// Ready's.
func TestReplyAheadCommitsWithTheAnswer(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	d := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, d, "r1")
	tr, err := db.Transcript(sidA, transcript.Header{SessionKey: turnKey, AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, text(sessions.RoleUser, "question")); err != nil {
		t.Fatal(err)
	}
	db.writes.barrier()
	ra := ahead(d, reply("rp1", "r1"))
	before := appendTrips(db)
	ids, err := tr.Append(sessions.WithReplyAhead(ctx, ra), text(sessions.RoleAssistant, "answer"))
	if err != nil {
		t.Fatal(err)
	}
	if n := appendTrips(db) - before; n != 1 {
		t.Errorf("the answer and its reply took %d round trips, want 1", n)
	}
	got, ok := ra.Taken()
	if !ok || got.ID != "rp1" || got.EntryID != ids[0] {
		t.Fatalf("Taken = %+v, %v; want reply rp1 of entry %s", got, ok, ids[0])
	}
	var usage int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM usage WHERE entry_id = $1`, ids[0]).Scan(&usage); err != nil || usage != 1 {
		t.Errorf("usage rows of the answer: %d, %v; want 1", usage, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	next := newDelivery(t, db, DeliveryOptions{})
	rs, err := next.Replies()
	if err != nil || len(rs) != 1 || rs[0].ID != "rp1" || rs[0].EntryID != ids[0] || len(rs[0].Records) != 1 || rs[0].Records[0] != "r1" {
		t.Fatalf("Replies at the next start = %+v, %v; want rp1 of entry %s answering r1", rs, err, ids[0])
	}
	if ps, err := next.Pending(); err != nil || len(ps) != 0 {
		t.Errorf("Pending at the next start = %+v, %v; want none (r1 is answered)", ps, err)
	}
	if err := next.Sent("rp1", 1); err != nil {
		t.Fatal(err)
	}
	if !isDup(t, next, "r1") {
		t.Error("r1 not done once its reply was sent")
	}
}

// TestReplyAheadFencedStoresNothing: an answer whose session lease moved
// on is refused with its reply: neither the entry nor the outbox record is
// stored, and nothing is taken.
func TestReplyAheadFencedStoresNothing(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	d := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	mustAccept(t, d, "r1")
	h := beginTurn(t, d, "r1")
	if !h.Held {
		t.Fatal("turn not held")
	}
	tr, err := db.Transcript(sidA, transcript.Header{SessionKey: turnKey, AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() WHERE name = $1`, h.Fence.Lease); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Leases("replica-b").Acquire(ctx, h.Fence.Lease, time.Minute); err != nil || !ok {
		t.Fatalf("another holder's Acquire = %v, %v", ok, err)
	}
	ra := ahead(d, reply("rp1", "r1"))
	fctx := sessions.WithReplyAhead(sessions.WithFence(ctx, h.Fence), ra)
	if _, err := tr.Append(fctx, text(sessions.RoleAssistant, "stale")); !errors.Is(err, sessions.ErrFenced) {
		t.Fatalf("answer under a lost lease: %v; want sessions.ErrFenced", err)
	}
	if _, ok := ra.Taken(); ok {
		t.Error("a refused answer's reply is taken")
	}
	var entries, replies, usage int
	if err := db.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM transcript_entries), (SELECT count(*) FROM delivery_replies),
		(SELECT count(*) FROM usage)`).Scan(&entries, &replies, &usage); err != nil {
		t.Fatal(err)
	}
	if entries+replies+usage != 0 {
		t.Errorf("after the fenced answer: %d entries, %d replies, %d usage rows; want none", entries, replies, usage)
	}
}

// TestReplyAheadNotTakenByAnotherDelivery: a ReplyAhead into a Delivery
// this DB cannot write (another database's), or one with marks waiting
// in memory, is left to the caller: the answer is appended alone.
func TestReplyAheadNotTakenByAnotherDelivery(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	other, _ := openTest(t)
	ctx := ctxT(t)
	d := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, d, "r1")
	faulty := newDelivery(t, db, DeliveryOptions{})
	faulty.faulted.Store(true) // as while marks wait for the server
	tr, err := other.Transcript(sidA, transcript.Header{SessionKey: turnKey, AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := db.Transcript(sidB, transcript.Header{SessionKey: turnKey, AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		tr *TranscriptLog
		d  *Delivery
	}{"another database": {tr, d}, "marks waiting": {mine, faulty}} {
		ra := ahead(c.d, reply("rp-"+name, "r1"))
		if _, err := c.tr.Append(sessions.WithReplyAhead(ctx, ra), text(sessions.RoleAssistant, "answer")); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := ra.Taken(); ok {
			t.Errorf("%s: the reply was taken", name)
		}
	}
	var replies int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_replies`).Scan(&replies); err != nil || replies != 0 {
		t.Errorf("replies stored: %d, %v; want none", replies, err)
	}
}

// TestReplyAheadWithdrawnWhenOutcomeUnknown: when the answer's append
// fails without the server's refusal (the connection lost before the
// commit's answer, or the turn's context ended while the group commit
// held the write), the reply it may have stored is withdrawn and its
// records unanswered: the turn counts as failed (or stopped) and runs
// them again with a reply of its own, which must be the only one a start
// finds, or finishes them, after which no start may send it.
func TestReplyAheadWithdrawnWhenOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, lost := range []error{errors.New("unexpected EOF"), context.Canceled} {
		t.Run(lost.Error(), func(t *testing.T) {
			t.Parallel()
			db, _ := openTest(t)
			ctx := ctxT(t)
			d := newDelivery(t, db, DeliveryOptions{})
			mustAccept(t, d, "r1")
			tr, err := db.Transcript(sidA, transcript.Header{SessionKey: turnKey, AgentID: "main"})
			if err != nil {
				t.Fatal(err)
			}
			ra := ahead(d, reply("rp1", "r1"))
			if _, err := tr.Append(sessions.WithReplyAhead(ctx, ra), text(sessions.RoleAssistant, "answer")); err != nil {
				t.Fatal(err)
			}
			rp, ok := ra.Taken()
			if !ok {
				t.Fatal("reply not taken")
			}
			// The same commit, as its caller sees it when the answer is lost.
			w := &aheadWrite{d: d, ra: ra, reply: rp, fill: func(*pgx.Batch) {}}
			w.failed(lost)
			var replies int
			var answered bool
			if err := db.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM delivery_replies),
				(SELECT reply IS NOT NULL FROM delivery_records WHERE id = 'r1')`).Scan(&replies, &answered); err != nil {
				t.Fatal(err)
			}
			if replies != 0 || answered {
				t.Errorf("after an unknown outcome: %d replies, r1 answered %v; want the reply withdrawn", replies, answered)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			next := newDelivery(t, db, DeliveryOptions{})
			if ps, err := next.Pending(); err != nil || len(ps) != 1 || ps[0].ID != "r1" {
				t.Errorf("Pending at the next start = %+v, %v; want r1 to run again", ps, err)
			}
		})
	}
}

// TestReplyAheadRefusedStillAppendsTheAnswer: when the server refuses the
// reply's statements for what they hold, the answer is appended alone and
// the reply left to the turn's Ready (which reports the refusal without
// failing the turn, as before): a reply the outbox cannot take never
// costs the transcript its answer.
func TestReplyAheadRefusedStillAppendsTheAnswer(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	d := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, d, "r1")
	if _, err := db.pool.Exec(ctx, `CREATE FUNCTION refuse_reply() RETURNS trigger LANGUAGE plpgsql AS
		$$BEGIN RAISE EXCEPTION 'reply refused' USING ERRCODE = '22023'; END$$;
		CREATE TRIGGER refuse_reply BEFORE INSERT ON delivery_replies FOR EACH ROW EXECUTE FUNCTION refuse_reply()`); err != nil {
		t.Fatal(err)
	}
	tr, err := db.Transcript(sidA, transcript.Header{SessionKey: turnKey, AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	ra := ahead(d, reply("rp1", "r1"))
	ids, err := tr.Append(sessions.WithReplyAhead(ctx, ra), text(sessions.RoleAssistant, "answer"))
	if err != nil {
		t.Fatalf("answer with a refused reply: %v", err)
	}
	if _, ok := ra.Taken(); ok {
		t.Error("a refused reply is taken")
	}
	h, err := tr.History(ctx)
	if err != nil || len(h) != 1 || h[0].Text() != "answer" {
		t.Errorf("transcript = %+v, %v; want the answer", h, err)
	}
	var usage int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM usage WHERE entry_id = $1`, ids[0]).Scan(&usage); err != nil || usage != 0 {
		t.Errorf("usage rows stored with a refused reply: %d, %v; want none (the turn records it)", usage, err)
	}
}
