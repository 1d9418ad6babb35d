package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// dmKey is a Telegram DM's session key of agent main.
func dmKey(t *testing.T) routing.Key {
	t.Helper()
	return dmKeyOf(t, "5001")
}

// dmKeyOf is the Telegram DM session key of agent main with peer.
func dmKeyOf(t *testing.T, peer string) routing.Key {
	t.Helper()
	k, err := routing.PeerKey("main", "telegram", "", routing.Direct, peer)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// inputsIndex is agent main's index on db under an idle reset of 10
// minutes, on a clock the test moves.
func inputsIndex(db *DB) (*Index, *fakeClock) {
	clk := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	db.now = clk.now
	return db.Index("main", idle), clk
}

// otherProcess opens a second handle on url (another replica, or this
// daemon after a restart), its index as inputsIndex's on the clock clk,
// moved a minute on. The caller closes it.
func otherProcess(t *testing.T, url string, clk *fakeClock) (*DB, *Index) {
	t.Helper()
	other, err := Open(ctxT(t), Options{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	x := other.Index("main", idle)
	clk.t = clk.t.Add(time.Minute)
	other.now = clk.now
	return other, x
}

// beginWith is Begin carrying inputs texts; it returns what Begin
// returned and the InputsAhead.
func beginWith(t *testing.T, ctx context.Context, x *Index, key routing.Key, texts ...string) (sessions.Entry, sessions.BeginInfo, *sessions.InputsAhead) {
	t.Helper()
	in := &sessions.InputsAhead{}
	for _, s := range texts {
		in.Msgs = append(in.Msgs, text(sessions.RoleUser, s))
	}
	e, info, err := x.Begin(sessions.WithInputsAhead(ctx, in), key, sessions.Origin{Channel: "telegram", ChatType: "direct", From: "5001"})
	if err != nil {
		t.Fatal(err)
	}
	return e, info, in
}

// userTexts is the text of every user message in session id's transcript,
// in order.
func userTexts(t *testing.T, db *DB, id string) []string {
	t.Helper()
	rows, err := db.pool.Query(ctxT(t), `SELECT body->'message'->'content'->0->>'text' FROM transcript_entries
		WHERE session_id = $1 AND type = 'message' AND body->'message'->>'role' = 'user' ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func sameTexts(a []string, b ...string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBeginAppendsInputsWithTheTouch (issue 21): Begin of a fresh session
// this process began before appends the turn's inputs handed to it in the
// touch's one round trip, and hands back their ids and the context after
// them; the entry is touched as a plain Begin touches it.
func TestBeginAppendsInputsWithTheTouch(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x, clk := inputsIndex(db)
	key := dmKey(t)
	first, info, in := beginWith(t, ctx, x, key, "hello")
	if !info.Created {
		t.Fatalf("first Begin: %+v", info)
	}
	if _, _, ok := in.Taken(); ok {
		t.Fatal("the inputs of a session Begin created were taken")
	}
	tr, err := db.Transcript(first.SessionID, transcript.Header{SessionKey: key.String(), AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendLazy(ctx, text(sessions.RoleUser, "hello"), text(sessions.RoleAssistant, "hi")); err != nil {
		t.Fatal(err)
	}
	db.writes.barrier()
	clk.t = clk.t.Add(time.Minute)
	before := appendTrips(db)
	e, info, in := beginWith(t, ctx, x, key, "second", "third")
	if n := appendTrips(db) - before; n != 1 {
		t.Errorf("Begin with its inputs took %d round trips, want 1", n)
	}
	if info != (sessions.BeginInfo{}) || e.SessionID != first.SessionID || !e.LastInteractionAt.Equal(clk.t) {
		t.Fatalf("Begin = %+v, %+v; want the session touched at %v", e, info, clk.t)
	}
	ids, c, ok := in.Taken()
	if !ok || len(ids) != 2 || c == nil {
		t.Fatalf("Taken = %v, %v, %v; want two ids and the context", ids, c, ok)
	}
	if got := userTexts(t, db, first.SessionID); !sameTexts(got, "hello", "second", "third") {
		t.Errorf("user messages of the session: %q", got)
	}
	cold, err := db.Transcript(first.SessionID, transcript.Header{SessionKey: key.String(), AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	db.chains.drop(first.SessionID) // read from the rows, not the chain the append cached
	want, err := cold.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, *c); d != "" || !strings.Contains(c.Messages[len(c.Messages)-1].Text(), "third") {
		t.Errorf("context handed back (-read +handed):\n%s", d)
	}
}

// TestBeginInputsAheadNotTakenByARolledOverSession: a session that went
// stale between two messages (the idle reset) rolls over as before, and
// the inputs handed over land nowhere: not in the old session, and the
// caller appends them to the new one.
func TestBeginInputsAheadNotTakenByARolledOverSession(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x, clk := inputsIndex(db)
	key := dmKey(t)
	first, _, _ := beginWith(t, ctx, x, key, "hello")
	clk.t = clk.t.Add(11 * time.Minute)
	e, info, in := beginWith(t, ctx, x, key, "after the break")
	if info.ResetReason == "" || info.Previous != first.SessionID || e.SessionID == first.SessionID {
		t.Fatalf("Begin after the idle time: %+v, %+v; want a rollover of %s", e, info, first.SessionID)
	}
	if _, _, ok := in.Taken(); ok {
		t.Error("inputs taken by a Begin that rolled the session over")
	}
	for _, id := range []string{first.SessionID, e.SessionID} {
		if got := userTexts(t, db, id); len(got) != 0 {
			t.Errorf("session %s holds %q; want nothing", id, got)
		}
	}
	// The next message, in time, goes with the touch of the new session.
	clk.t = clk.t.Add(time.Minute)
	e2, _, in := beginWith(t, ctx, x, key, "next")
	if _, _, ok := in.Taken(); !ok || e2.SessionID != e.SessionID {
		t.Fatalf("next Begin: session %s, taken %v; want %s, taken", e2.SessionID, ok, e.SessionID)
	}
	if got := userTexts(t, db, e.SessionID); !sameTexts(got, "next") {
		t.Errorf("new session holds %q; want [next]", got)
	}
}

// TestBeginInputsAheadAfterAResetElsewhere: another process (a replica,
// the CLI) reset the session since this one began it: Begin returns the
// new session with the inputs in it (not in the session this process
// remembers). A /new here moves the inputs with it at once.
func TestBeginInputsAheadAfterAResetElsewhere(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	x, clk := inputsIndex(db)
	key := dmKey(t)
	first, _, _ := beginWith(t, ctx, x, key, "hello")
	other, err := Open(ctx, Options{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	reset, err := other.Store("main", idle).Reset(ctx, key, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Minute)
	e, _, in := beginWith(t, ctx, x, key, "after the reset")
	if e.SessionID != reset.SessionID {
		t.Fatalf("Begin after a reset elsewhere: session %s; want %s", e.SessionID, reset.SessionID)
	}
	if _, _, ok := in.Taken(); !ok {
		t.Error("inputs not taken for the session reset elsewhere")
	}
	if got := userTexts(t, db, first.SessionID); len(got) != 0 {
		t.Errorf("the session reset holds %q; want nothing", got)
	}

	st := db.Store("main", idle)
	renewed, err := st.Reset(ctx, key, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Minute)
	in = &sessions.InputsAhead{Msgs: []sessions.Message{text(sessions.RoleUser, "after /new")}}
	e, _, err = st.Begin(sessions.WithInputsAhead(ctx, in), key, sessions.Origin{Channel: "telegram", ChatType: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := in.Taken(); !ok || e.SessionID != renewed.SessionID {
		t.Fatalf("Begin after /new here: session %s, taken %v; want %s, taken", e.SessionID, ok, renewed.SessionID)
	}
	for id, want := range map[string][]string{renewed.SessionID: {"after /new"}, reset.SessionID: {"after the reset"}, first.SessionID: nil} {
		if got := userTexts(t, db, id); !sameTexts(got, want...) {
			t.Errorf("session %s holds %q; want %q", id, got, want)
		}
	}
}

// TestBeginInputsAheadFencedStoresNothing: under a lease another process
// took, Begin still begins the session (as without inputs) and appends
// nothing: the turn's own append then meets the fence.
func TestBeginInputsAheadFencedStoresNothing(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x, clk := inputsIndex(db)
	key := dmKey(t)
	first, _, _ := beginWith(t, ctx, x, key, "hello")
	d := newDelivery(t, db, DeliveryOptions{Holder: "replica-a"})
	mustAccept(t, d, "r1")
	h := beginTurn(t, d, "r1")
	if !h.Held {
		t.Fatal("turn not held")
	}
	if _, err := db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() WHERE name = $1`, h.Fence.Lease); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Leases("replica-b").Acquire(ctx, h.Fence.Lease, time.Minute); err != nil || !ok {
		t.Fatalf("another holder's Acquire = %v, %v", ok, err)
	}
	clk.t = clk.t.Add(time.Minute)
	e, info, in := beginWith(t, sessions.WithFence(ctx, h.Fence), x, key, "stale")
	if e.SessionID != first.SessionID || info != (sessions.BeginInfo{}) || !e.LastInteractionAt.Equal(clk.t) {
		t.Fatalf("fenced Begin = %+v, %+v; want the session touched", e, info)
	}
	if _, _, ok := in.Taken(); ok {
		t.Error("inputs taken under a lost lease")
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM transcript_entries`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d transcript entries after the fenced Begin (%v); want none", n, err)
	}
}

// TestBeginInputsAheadOnAMainSession: a key whose reset policy needs its
// entry (the main session) reads it first, then touches it with the
// inputs: the session just read, no memory of an earlier Begin needed.
func TestBeginInputsAheadOnAMainSession(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x, clk := inputsIndex(db)
	key, err := routing.MainKey("main", "main")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := beginWith(t, ctx, x, key, "hello")
	fresh := db.Index("main", idle) // a process that began nothing yet
	db.heads.mu.Lock()
	db.heads.m = nil
	db.heads.mu.Unlock()
	clk.t = clk.t.Add(time.Minute)
	e, _, in := beginWith(t, ctx, fresh, key, "again")
	if _, _, ok := in.Taken(); !ok || e.SessionID != first.SessionID {
		t.Fatalf("Begin: session %s, taken %v; want %s, taken", e.SessionID, ok, first.SessionID)
	}
	if got := userTexts(t, db, first.SessionID); !sameTexts(got, "again") {
		t.Errorf("session holds %q; want [again]", got)
	}
}

// TestBeginInputsAheadForASessionBegunElsewhere: a process that never
// began a session (another replica, or this daemon after a restart) takes
// a message's inputs with its first Begin of it in one round trip, with or
// without a read of the entry first (Store.Get; the accept's QueuePeek
// notes it the same way), and hands back the context after them. A
// session whose transcript is still empty (created elsewhere, its first
// turn not yet appended) gets its session header, naming its id, first —
// as a transcript's first append by id writes it.
func TestBeginInputsAheadForASessionBegunElsewhere(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	x, clk := inputsIndex(db)
	key := dmKey(t)
	first, _, _ := beginWith(t, ctx, x, key, "hello") // created: its transcript stays empty
	var wanted []string
	for _, read := range []bool{false, true} {
		other, ox := otherProcess(t, url, clk)
		if read {
			if e, ok, err := other.Store("main", idle).Get(key); err != nil || !ok || e.SessionID != first.SessionID {
				t.Fatalf("Get = %v, %v, %v", e.SessionID, ok, err)
			}
		}
		before := appendTrips(other)
		msg := fmt.Sprintf("read %v", read)
		e, info, in := beginWith(t, ctx, ox, key, msg)
		ids, c, taken := in.Taken()
		trips := appendTrips(other) - before
		other.Close()
		if e.SessionID != first.SessionID || info != (sessions.BeginInfo{}) {
			t.Fatalf("read %v: Begin returned session %s, %+v; want %s touched", read, e.SessionID, info, first.SessionID)
		}
		if !taken || len(ids) != 1 || c == nil {
			t.Fatalf("read %v: Taken = %v, %v, %v; want the inputs taken with the context", read, ids, c, taken)
		}
		if trips != 1 {
			t.Errorf("read %v: Begin with its inputs took %d round trips, want 1", read, trips)
		}
		wanted = append(wanted, msg)
		if got := c.Messages[len(c.Messages)-1].Text(); !strings.HasSuffix(got, msg) || !strings.Contains(got, wanted[0]) {
			t.Errorf("read %v: context handed back ends %q; want %q", read, got, strings.Join(wanted, "\n\n"))
		}
	}
	if got := userTexts(t, db, first.SessionID); !sameTexts(got, wanted...) {
		t.Errorf("user messages of the session: %q; want %q", got, wanted)
	}
	var seq int64
	var typ, id string
	if err := db.pool.QueryRow(ctx, `SELECT seq, type, body->>'id' FROM transcript_entries WHERE session_id = $1 ORDER BY seq LIMIT 1`,
		first.SessionID).Scan(&seq, &typ, &id); err != nil {
		t.Fatal(err)
	}
	if seq != 1 || typ != TypeSession || id != first.SessionID {
		t.Errorf("first entry: seq %d, type %q, id %q; want the session header naming %s", seq, typ, id, first.SessionID)
	}
	all, err := db.Load(ctx, first.SessionID, 1)
	if err != nil {
		t.Fatal(err)
	}
	var hdr map[string]any
	if err := json.Unmarshal(all[0].Body, &hdr); err != nil || hdr["sessionKey"] != key.String() || hdr["agentId"] != "main" {
		t.Errorf("session header %s (%v); want its key and agent", all[0].Body, err)
	}
}

// TestBeginInputsAheadClockBehind: a process whose clock is behind the
// one that last wrote the entry (its updated_at ahead) still appends the
// inputs with the touch of a session it has not begun, but does not read
// the context there (its read is of the session the touch updated at its
// own time): it hands back no context, and the turn reads it.
func TestBeginInputsAheadClockBehind(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	x, clk := inputsIndex(db)
	key := dmKey(t)
	first, _, _ := beginWith(t, ctx, x, key, "hello")
	if _, err := db.pool.Exec(ctx, `UPDATE entries SET updated_at = $1 WHERE session_id = $2`, clk.t.Add(time.Hour), first.SessionID); err != nil {
		t.Fatal(err)
	}
	other, ox := otherProcess(t, url, clk)
	defer other.Close()
	e, _, in := beginWith(t, ctx, ox, key, "behind")
	ids, c, ok := in.Taken()
	if e.SessionID != first.SessionID || !ok || len(ids) != 1 || c != nil {
		t.Fatalf("Begin: session %s, Taken = %v, %v, %v; want %s, the input taken, no context", e.SessionID, ids, c, ok, first.SessionID)
	}
	if got := userTexts(t, db, first.SessionID); !sameTexts(got, "behind") {
		t.Errorf("user messages of the session: %q", got)
	}
}
