package pgstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// TestBeginCreatesWithTheInputs (issue 21): a key's first Begin, with
// inputs that hold for a created session, creates the session, writes its
// transcript's header and the inputs and reads the context in the
// creation's write — two round trips in all (the touch that finds no
// session, the creation), where the creation and the turn's append took
// three — and hands back the inputs' ids and a context equal to a cold
// read. Inputs not marked for a created session are not taken.
func TestBeginCreatesWithTheInputs(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x, _ := inputsIndex(db)
	key := dmKey(t)

	in := &sessions.InputsAhead{Msgs: []sessions.Message{text(sessions.RoleUser, "first words")}, Created: true}
	before := appendTrips(db)
	e, info, err := x.Begin(sessions.WithInputsAhead(ctx, in), key, sessions.Origin{Channel: "telegram", ChatType: "direct", From: "5001"})
	if err != nil {
		t.Fatal(err)
	}
	if n := appendTrips(db) - before; n != 2 {
		t.Errorf("a new session's Begin with its inputs took %d round trips, want 2", n)
	}
	if !info.Created {
		t.Fatalf("Begin = %+v; want the session created", info)
	}
	ids, c, ok := in.Taken()
	if !ok || len(ids) != 1 || c == nil {
		t.Fatalf("Taken = %v, %v, %v; want the input's id and the context", ids, c, ok)
	}
	got, ok, err := db.Store("main", idle).Get(key)
	if err != nil || !ok || got.SessionID != e.SessionID {
		t.Fatalf("Get = %s, %v, %v; want %s", got.SessionID, ok, err, e.SessionID)
	}
	all, err := db.Load(ctx, e.SessionID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Type != TypeSession || all[0].ID != e.SessionID || all[1].ID != ids[0] {
		t.Fatalf("transcript %+v; want the header and the input %s", all, ids[0])
	}
	cold, err := db.Transcript(e.SessionID, transcript.Header{SessionKey: key.String(), AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	db.chains.drop(e.SessionID)
	want, err := cold.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, *c); d != "" || !strings.Contains(c.Messages[len(c.Messages)-1].Text(), "first words") {
		t.Errorf("context handed back (-read +handed):\n%s", d)
	}

	other := dmKeyOf(t, "5002")
	in = &sessions.InputsAhead{Msgs: []sessions.Message{text(sessions.RoleUser, "inherits")}}
	if _, info, err = x.Begin(sessions.WithInputsAhead(ctx, in), other, sessions.Origin{Channel: "telegram", ChatType: "direct"}); err != nil || !info.Created {
		t.Fatalf("Begin of another key = %+v, %v", info, err)
	}
	if _, _, ok := in.Taken(); ok {
		t.Error("inputs not marked for a created session were taken by its creation")
	}
}

// TestConcurrentBeginsWithInputsLoseNothing: two processes (replicas) begin
// one new key at once, many times each, every Begin carrying its own input
// (marked for a created session): one session results, its transcript
// holds one header first and then every input exactly once, in seqs
// without a gap, whichever path took each (the creation, the touch of the
// session remembered, the touch of any session) or the turn's own append
// when Begin took none.
func TestConcurrentBeginsWithInputsLoseNothing(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	other, err := Open(ctx, Options{URL: url, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	key := dmKeyOf(t, "5201")
	stores := []*Store{db.Store("main", idle), other.Store("main", idle)}
	const n = 40
	run(t, n, func(i int) error {
		st := stores[i%2]
		msg := fmt.Sprintf("input %d", i)
		in := &sessions.InputsAhead{Msgs: []sessions.Message{text(sessions.RoleUser, msg)}, Created: true}
		e, _, err := st.Begin(sessions.WithInputsAhead(ctx, in), key, sessions.Origin{Channel: "telegram", ChatType: "direct"})
		if err != nil {
			return err
		}
		if _, _, ok := in.Taken(); ok {
			return nil
		}
		tr, err := st.TranscriptOf(e)
		if err != nil {
			return err
		}
		_, err = tr.AppendLazy(ctx, in.Msgs...) // what the turn does when Begin took none
		return err
	})
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT session_id FROM transcript_entries`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) != 1 {
		t.Fatalf("transcripts of sessions %v (%v); want one", ids, err)
	}
	all, err := db.Load(ctx, ids[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n+1 || all[0].Type != TypeSession || all[0].ID != ids[0] {
		t.Fatalf("%d entries, first %+v; want the header and %d inputs", len(all), all[0], n)
	}
	seen := map[string]int{}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Errorf("entry %d at seq %d", i, e.Seq)
		}
		if i > 0 && e.Type == TypeSession {
			t.Errorf("a second header at seq %d", e.Seq)
		}
	}
	for _, s := range userTexts(t, db, ids[0]) {
		seen[s]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("input %d", i)]; c != 1 {
			t.Errorf("input %d stored %d times", i, c)
		}
	}
}
