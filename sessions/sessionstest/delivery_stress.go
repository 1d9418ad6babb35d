package sessionstest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// testDeliveryConcurrent races goroutines accepting and marking their own
// records and shared ones: no mark is lost, a shared id is accepted once.
func testDeliveryConcurrent(t *testing.T, f *dfix) {
	const each = 9
	var sharedNew atomic.Int64
	for i := range each {
		f.accept(fmt.Sprint("shared-", i))
	}
	parallel(goroutines, func(g int) {
		for i := range each {
			id := fmt.Sprintf("g%d-%d", g, i)
			if dup, err := f.d.Accept(f.ctx, record(id)); err != nil || dup {
				t.Errorf("Accept(%s) = %v, %v", id, dup, err)
				return
			}
			if dup, err := f.d.Accept(f.ctx, record(fmt.Sprint("race-", i))); err != nil {
				t.Errorf("Accept(race-%d): %v", i, err)
			} else if !dup {
				sharedNew.Add(1)
			}
			shared := fmt.Sprint("shared-", i)
			for _, err := range []error{f.d.Start(id, shared), f.d.Fail(id), f.d.Start(id), f.d.Fail(shared)} {
				if err != nil {
					t.Errorf("mark %s: %v", id, err)
				}
			}
			switch i % 3 {
			case 0:
				if err := f.d.Done(id); err != nil {
					t.Errorf("Done(%s): %v", id, err)
				}
			case 1:
				rp := reply("rp-"+id, []string{id}, "one", "two")
				if err := f.d.Ready(rp); err != nil {
					t.Errorf("Ready(%s): %v", rp.ID, err)
				}
				if err := f.d.Sent(rp.ID, 1); err != nil {
					t.Errorf("Sent(%s): %v", rp.ID, err)
				}
			}
		}
	})
	if n := sharedNew.Load(); n != each {
		t.Errorf("%d racing accepts of %d ids were new, want %d", n, each, each)
	}
	f.reopen()
	var want []string
	for g := range goroutines {
		for i := range each {
			if i%3 == 2 {
				want = append(want, fmt.Sprintf("g%d-%d/2/1", g, i))
			}
		}
	}
	for i := range each {
		want = append(want, fmt.Sprintf("shared-%d/%d/%d", i, goroutines, goroutines),
			fmt.Sprintf("race-%d/0/0", i))
	}
	got := f.pendingIDs()
	slices.Sort(want)
	slices.Sort(got)
	f.wantList("pending after concurrent marks (id/starts/failures)", want, got)
	rs := f.replies()
	if len(rs) != goroutines*each/3 {
		t.Errorf("%d replies stored, want %d", len(rs), goroutines*each/3)
	}
	for _, r := range rs {
		if r.Sent != 1 || len(r.Chunks) != 2 {
			t.Errorf("reply %s: sent %d of %d, want 1 of 2", r.ID, r.Sent, len(r.Chunks))
		}
	}
	f.wantDup("g0-0", true)
	f.wantDup("g19-3", true)
}

// hostileIDs are ids no backend can keep unchanged: refused.
var hostileIDs = []struct{ id, why string }{
	{"", "empty"},
	{"tg:a\x00b", "NUL"},
	{"tg:\xff\xfe", "UTF-8"},
}

// oddIDs are legal ids that must round-trip exactly.
var oddIDs = []string{
	"'; DROP TABLE delivery_records; --",
	`tg:"quoted"\back`,
	"ключ:💬:1",
	"line\nbreak\ttab",
	"%s%d%n",
	strings.Repeat("long:", 200),
}

func testDeliveryHostile(t *testing.T, f *dfix) {
	for _, h := range hostileIDs {
		if _, err := f.d.Accept(f.ctx, record(h.id)); err == nil || !strings.Contains(err.Error(), h.why) {
			t.Errorf("Accept(%q) error %v, want one saying %s", h.id, err, h.why)
		}
		if err := f.d.Ready(reply(h.id, nil, "x")); err == nil || !strings.Contains(err.Error(), h.why) {
			t.Errorf("Ready(%q) error %v, want one saying %s", h.id, err, h.why)
		}
		if err := f.d.Draft(sessions.Draft{ID: h.id}); err == nil || !strings.Contains(err.Error(), h.why) {
			t.Errorf("Draft(%q) error %v, want one saying %s", h.id, err, h.why)
		}
		for what, err := range map[string]error{
			"Start": f.d.Start(h.id), "Fail": f.d.Fail(h.id), "Abort": f.d.Abort(h.id),
			"Done": f.d.Done(h.id), "Sent": f.d.Sent(h.id, 1), "DraftDone": f.d.DraftDone(h.id),
		} {
			if err != nil {
				t.Errorf("%s(%q): %v, want nothing done", what, h.id, err)
			}
		}
		if f.d.DraftLive(h.id) {
			t.Errorf("DraftLive(%q) = true", h.id)
		}
	}
	if err := f.d.Ready(reply("ok", []string{"tg:a\x00b"}, "x")); err == nil {
		t.Error("Ready with a NUL record id succeeded")
	}
	bad := record("bad-json")
	bad.Payload = json.RawMessage(`{"text":`)
	if _, err := f.d.Accept(f.ctx, bad); err == nil {
		t.Error("Accept with a payload that is not JSON succeeded")
	}
	for _, id := range oddIDs {
		r := record(id)
		r.Payload = json.RawMessage(`{"text":"nul \u0000 and ' quote"}`)
		f.acceptRec(r)
		f.must("Start", f.d.Start(id))
	}
	f.accept("answered")
	f.must("Ready", f.d.Ready(reply(oddIDs[0], []string{"answered"}, "nul \x00 inside", "bad \xff\xfe utf-8", "'; DROP TABLE x; --")))
	f.must("Draft", f.d.Draft(sessions.Draft{ID: oddIDs[1], Target: json.RawMessage(`{"x":"\u0000"}`), MessageID: oddIDs[2]}))
	f.reopen()
	var want []string
	for _, id := range oddIDs {
		want = append(want, id+"/1/0")
	}
	f.wantList("odd ids pending after reopen", want, f.pendingIDs())
	for _, r := range f.pending() {
		var v map[string]string
		if err := json.Unmarshal(r.Payload, &v); err != nil || v["text"] != "nul \x00 and ' quote" {
			t.Errorf("payload of %q = %s (%v)", r.ID, r.Payload, err)
		}
	}
	rs := f.replies()
	if len(rs) != 1 || rs[0].ID != oddIDs[0] {
		t.Fatalf("replies = %+v, want %q", rs, oddIDs[0])
	}
	f.wantList("chunks", []string{"nul \x00 inside", "bad \uFFFD\uFFFD utf-8", "'; DROP TABLE x; --"}, rs[0].Chunks)
	ds, err := f.d.Drafts()
	f.must("Drafts", err)
	if len(ds) != 1 || ds[0].ID != oddIDs[1] || ds[0].MessageID != oddIDs[2] || !sameJSON(t, ds[0].Target, json.RawMessage(`{"x":"\u0000"}`)) {
		t.Errorf("drafts = %+v", ds)
	}
	f.must("Done", f.d.Done(oddIDs...))
	for _, id := range oddIDs {
		f.wantDup(id, true)
	}
}

func testDeliveryHealth(t *testing.T, f *dfix) {
	if err := f.d.Health(); err != nil {
		t.Fatalf("Health of a new journal: %v", err)
	}
	f.accept("a")
	f.accept("b")
	f.must("Ready", f.d.Ready(reply("rp", []string{"a"}, "x", "y")))
	st := f.d.Stats()
	if st.Pending != 2 || st.Replies != 1 {
		t.Errorf("stats pending %d replies %d, want 2 and 1", st.Pending, st.Replies)
	}
	if st.Lines < 3 || st.WriteFailures != 0 {
		t.Errorf("stats lines %d failures %d, want ≥ 3 and 0", st.Lines, st.WriteFailures)
	}
	f.must("Sent", f.d.Sent("rp", 2))
	f.must("Done", f.d.Done("b"))
	if st := f.d.Stats(); st.Pending != 0 || st.Replies != 0 {
		t.Errorf("stats after completion: pending %d replies %d, want 0 and 0", st.Pending, st.Replies)
	}
	if err := f.d.Health(); err != nil {
		t.Errorf("Health after writes: %v", err)
	}
}
