package pgstore

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
