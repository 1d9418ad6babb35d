package sessionstest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gateway/gateway/sessions"
)

func testAcceptDup(t *testing.T, f *dfix) {
	f.accept("tg:bot:-100:1")
	f.accept("tg:bot:-100:2")
	f.wantDup("tg:bot:-100:1", true) // pending
	f.must("Done", f.d.Done("tg:bot:-100:2"))
	f.must("second Done", f.d.Done("tg:bot:-100:2"))
	f.wantDup("tg:bot:-100:2", true) // done
	f.wantDup("tg:bot:-100:3", false)
	f.reopen()
	f.wantDup("tg:bot:-100:1", true)
	f.wantDup("tg:bot:-100:2", true)
	f.wantDup("tg:bot:-100:3", true)
	f.wantList("pending after reopen", []string{"tg:bot:-100:1/0/0", "tg:bot:-100:3/0/0"}, f.pendingIDs())
}

func testDoneRetention(t *testing.T, f *dfix) {
	f.accept("old")
	f.must("Done", f.d.Done("old"))
	// Past DoneRetention an id is still remembered while it is among the
	// last DoneKeep completions.
	f.clk.Advance(sessions.DoneRetention + time.Hour)
	f.wantDup("old", true)
	f.accept("new")
	f.must("Done", f.d.Done("new"))
	f.reopen()
	f.wantDup("old", true)
	f.wantDup("new", true)
	f.wantList("pending", nil, f.pendingIDs())
}

func testRecordCounters(t *testing.T, f *dfix) {
	f.accept("r1")
	legacy := record("r2")
	legacy.Attempts, legacy.Consumed = 2, true // read from journals of earlier releases
	f.acceptRec(legacy)
	f.accept("r3")
	f.must("Start", f.d.Start("r1", "r2"))
	f.must("Fail", f.d.Fail("r1"))
	f.must("Start", f.d.Start("r1", "unknown"))
	f.must("Start", f.d.Start("r3"))
	f.must("Abort", f.d.Abort("r3")) // a shutdown: not a death
	f.must("Abort", f.d.Abort("r3")) // never below zero
	f.must("Start", f.d.Start())     // nothing
	f.must("Done", f.d.Done("r3"))
	f.must("Start of a done record", f.d.Start("r3"))
	f.reopen()
	got := f.pending()
	want := []sessions.Record{record("r1"), legacy}
	want[0].Starts, want[0].Failures = 2, 1
	want[1].Starts = 1
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(sessions.Record{}, "AcceptedAt", "Payload")); diff != "" {
		t.Errorf("pending records (-want +got):\n%s", diff)
	}
	if len(got) == 2 {
		if d := got[0].Deaths(); d != 1 {
			t.Errorf("r1 deaths = %d, want 1 (two starts, one failure)", d)
		}
		if d := got[1].Deaths(); d != 3 {
			t.Errorf("r2 deaths = %d, want 3 (one start, two attempts of an earlier release)", d)
		}
		if !got[0].AcceptedAt.Equal(t0) {
			t.Errorf("acceptedAt = %v, want the journal's clock %v", got[0].AcceptedAt, t0)
		}
	}
}

func testPendingOrder(t *testing.T, f *dfix) {
	// Accept order, not id order.
	ids := []string{"z", "y", "m9", "m10", "a", "b:2", "b:1"}
	for i, id := range ids {
		r := record(id)
		r.Payload = json.RawMessage(`{"text": "message <` + id + `> & more", "n": ` + string(rune('0'+i)) + `}`)
		r.AcceptedAt = t0.Add(time.Duration(i) * time.Second)
		f.acceptRec(r)
	}
	// What this handle accepted is in its caller's hands: not pending for it.
	f.wantList("pending of the accepting handle", nil, f.pendingIDs())
	f.must("Done", f.d.Done("m9"))
	f.reopen()
	got := f.pending()
	var gotIDs []string
	for _, r := range got {
		gotIDs = append(gotIDs, r.ID)
	}
	f.wantList("pending after reopen", []string{"z", "y", "m10", "a", "b:2", "b:1"}, gotIDs)
	for _, r := range got {
		want := `{"text":"message <` + r.ID + `> & more"}`
		var v map[string]any
		if err := json.Unmarshal(r.Payload, &v); err != nil || v["text"] != "message <"+r.ID+"> & more" {
			t.Errorf("payload of %s = %s, want the text of %s", r.ID, r.Payload, want)
		}
		if r.AgentID != "main" || r.SessionKey != "agent:main:telegram:group:-100" {
			t.Errorf("record %s: agent %q key %q", r.ID, r.AgentID, r.SessionKey)
		}
	}
	// Pending reads; it does not take: a second call returns the same.
	if diff := cmp.Diff(got, f.pending()); diff != "" {
		t.Errorf("second Pending differs:\n%s", diff)
	}
	// Records accepted by the new handle stay its own.
	f.accept("late")
	if n := len(f.pending()); n != len(got) {
		t.Errorf("Pending has %d records after a new accept, want %d", n, len(got))
	}
}

func testReplyRecovery(t *testing.T, f *dfix) {
	f.accept("r1")
	f.accept("r2")
	f.accept("r3")
	rp := reply("rp1", []string{"r1", "r2"}, "first part", "second \x00 part", "third")
	f.must("Ready", f.d.Ready(rp))
	f.must("Sent", f.d.Sent("rp1", 1))
	// The process dies after the first chunk.
	f.reopen()
	f.wantList("pending (r1, r2 are answered)", []string{"r3/0/0"}, f.pendingIDs())
	got := f.replies()
	rp.Sent, rp.CreatedAt = 1, t0
	if diff := cmp.Diff([]sessions.Reply{rp}, got, cmpopts.EquateEmpty(), cmp.Comparer(sameRaw(t))); diff != "" {
		t.Fatalf("replies after reopen (-want +got):\n%s", diff)
	}
	// The new process sends from the first unmarked chunk.
	f.must("Sent 2", f.d.Sent("rp1", 2))
	f.must("Sent 1 (late, lower)", f.d.Sent("rp1", 1))
	if rs := f.replies(); len(rs) != 1 || rs[0].Sent != 2 {
		t.Fatalf("replies after Sent 2 = %+v, want rp1 with 2 sent", rs)
	}
	f.must("Sent 3", f.d.Sent("rp1", 3))
	if rs := f.replies(); len(rs) != 0 {
		t.Errorf("a delivered reply is still stored: %+v", rs)
	}
	f.wantDup("r1", true)
	f.wantDup("r2", true)
	f.reopen()
	if rs := f.replies(); len(rs) != 0 {
		t.Errorf("a delivered reply came back after reopen: %+v", rs)
	}
	f.wantList("pending after delivery", []string{"r3/0/0"}, f.pendingIDs())
	f.wantDup("r1", true)
}

func testReplyEdges(t *testing.T, f *dfix) {
	for _, id := range []string{"a", "b", "c", "d"} {
		f.accept(id)
	}
	// No chunks: complete at once.
	f.must("Ready empty", f.d.Ready(reply("empty", []string{"a"})))
	// Replies come back oldest first; a reply stored again replaces itself
	// (and moves to the end).
	f.must("Ready r1", f.d.Ready(reply("r1", []string{"b"}, "x")))
	f.must("Ready r2", f.d.Ready(reply("r2", []string{"c"}, "y", "z")))
	f.must("Ready r1 again", f.d.Ready(reply("r1", []string{"b"}, "x2", "x3")))
	// A record done by itself while a reply answers it stays done.
	f.must("Done c", f.d.Done("c"))
	f.must("Sent unknown", f.d.Sent("nope", 3))
	f.reopen()
	var ids []string
	for _, r := range f.replies() {
		ids = append(ids, r.ID+":"+r.Chunks[0])
	}
	f.wantList("replies oldest first", []string{"r2:y", "r1:x2"}, ids)
	f.wantList("pending", []string{"d/0/0"}, f.pendingIDs())
	f.wantDup("a", true)
	f.must("Sent r2", f.d.Sent("r2", 5)) // more than there are: complete
	f.wantDup("c", true)
	f.must("Sent r1", f.d.Sent("r1", 2))
	f.reopen()
	if rs := f.replies(); len(rs) != 0 {
		t.Errorf("replies left: %+v", rs)
	}
	f.wantList("pending", []string{"d/0/0"}, f.pendingIDs())
	f.wantDup("b", true)
}

func testDrafts(t *testing.T, f *dfix) {
	target := json.RawMessage(`{"channel":"telegram","chatId":"-100"}`)
	for _, id := range []string{"d1", "d2", "d3", "d4"} {
		f.must("Draft", f.d.Draft(sessions.Draft{ID: id, SessionKey: "agent:main:telegram:group:-100", Target: target, MessageID: "m-" + id}))
	}
	f.wantList("drafts of the recording handle", nil, f.drafts())
	if !f.d.DraftLive("d1") || f.d.DraftLive("nope") {
		t.Errorf("DraftLive(d1) = %v, DraftLive(nope) = %v; want true, false", f.d.DraftLive("d1"), f.d.DraftLive("nope"))
	}
	f.must("DraftDone", f.d.DraftDone("d2"))
	f.must("DraftDone unknown", f.d.DraftDone("nope"))
	f.accept("r")
	rp := reply("rp", []string{"r"}, "answer")
	rp.Draft = "d3" // the reply's first chunk takes the draft over
	f.must("Ready", f.d.Ready(rp))
	if f.d.DraftLive("d3") || f.d.DraftLive("d2") {
		t.Error("a retired draft is still live")
	}
	// The process dies with d1 and d4 on screen.
	f.reopen()
	ds, err := f.d.Drafts()
	f.must("Drafts", err)
	want := []sessions.Draft{
		{ID: "d1", SessionKey: "agent:main:telegram:group:-100", Target: target, MessageID: "m-d1", CreatedAt: t0},
		{ID: "d4", SessionKey: "agent:main:telegram:group:-100", Target: target, MessageID: "m-d4", CreatedAt: t0},
	}
	if diff := cmp.Diff(want, ds, cmp.Comparer(sameRaw(t))); diff != "" {
		t.Errorf("drafts after reopen (-want +got):\n%s", diff)
	}
	f.must("DraftDone d1", f.d.DraftDone("d1"))
	f.must("Draft d5", f.d.Draft(sessions.Draft{ID: "d5", Target: target}))
	f.reopen()
	f.wantList("drafts after the second reopen", []string{"d4", "d5"}, f.drafts())
}

// sameRaw compares JSON values, not their bytes.
func sameRaw(t *testing.T) func(a, b json.RawMessage) bool {
	return func(a, b json.RawMessage) bool { return sameJSON(t, a, b) }
}
