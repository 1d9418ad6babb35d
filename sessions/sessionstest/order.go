package sessionstest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/gateway/gateway/sessions"
)

func testOrder(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	if l, err := f.idx.List(); err != nil || len(l) != 0 {
		t.Fatalf("List of an empty index = %d entries, %v", len(l), err)
	}
	if r, err := f.idx.Recent(5); err != nil || len(r) != 0 {
		t.Fatalf("Recent of an empty index = %d entries, %v", len(r), err)
	}
	// p-c and p-d are updated at the same instant: ties go by key.
	for _, step := range []struct {
		peer string
		gap  time.Duration
	}{{"p-a", 0}, {"p-b", time.Minute}, {"p-d", time.Minute}, {"p-c", 0}, {"p-e", time.Minute}} {
		f.clk.Advance(step.gap)
		f.begin(f.key(step.peer), origin(step.peer))
	}
	f.wantOrder("List", "p-e", "p-c", "p-d", "p-b", "p-a")
	f.wantRecent(2, "p-e", "p-c")
	f.wantRecent(3, "p-e", "p-c", "p-d")
	f.wantRecent(100, "p-e", "p-c", "p-d", "p-b", "p-a")
	if r, err := f.idx.Recent(0); err != nil || len(r) != 0 {
		t.Errorf("Recent(0) = %d entries, %v; want none", len(r), err)
	}

	// Counters, Patch and Begin all move updatedAt.
	f.clk.Advance(time.Minute)
	f.idx.AddCounters(f.key("p-a"), sessions.Counters{Messages: 1})
	f.wantOrder("List after AddCounters", "p-a", "p-e", "p-c", "p-d", "p-b")
	f.flush()
	f.clk.Advance(time.Minute)
	if _, err := f.idx.Patch(f.ctx, f.key("p-b"), func(e *sessions.Entry) error { e.Label = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Minute)
	f.begin(f.key("p-d"), origin("again"))
	f.wantOrder("List after Patch and Begin", "p-d", "p-b", "p-a", "p-e", "p-c")
	f.wantRecent(1, "p-d")

	// Every listed entry is what Get returns.
	l, err := f.idx.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l {
		f.same("List", e)
	}
}

func (f *fixture) wantOrder(what string, peers ...string) {
	f.t.Helper()
	l, err := f.idx.List()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
	f.compareKeys(what, l, peers)
}

func (f *fixture) wantRecent(n int, peers ...string) {
	f.t.Helper()
	r, err := f.idx.Recent(n)
	if err != nil {
		f.t.Fatalf("Recent(%d): %v", n, err)
	}
	f.compareKeys("Recent", r, peers)
}

func (f *fixture) compareKeys(what string, es []sessions.Entry, peers []string) {
	f.t.Helper()
	got := make([]string, len(es))
	for i, e := range es {
		got[i] = e.SessionKey
	}
	want := make([]string, len(peers))
	for i, p := range peers {
		want[i] = f.key(p).String()
	}
	if !slices.Equal(got, want) {
		f.t.Errorf("%s order:\n got %q\nwant %q", what, got, want)
	}
}

func testGetByID(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	a, _ := f.begin(f.key("a"), origin("a"))
	b, _ := f.begin(f.key("b"), origin("b"))
	for _, e := range []sessions.Entry{a, b} {
		got, ok, err := f.idx.GetByID(e.SessionID)
		if err != nil || !ok {
			t.Fatalf("GetByID(%s) = %v, %v", e.SessionID, ok, err)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("GetByID (-want +got):\n%s", diff)
		}
	}
	n, err := f.idx.Reset(f.ctx, f.key("a"), sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.idx.GetByID(a.SessionID); err != nil || ok {
		t.Errorf("GetByID of an archived session = %v, %v; want not current", ok, err)
	}
	if got, ok, err := f.idx.GetByID(n.SessionID); err != nil || !ok || got.SessionKey != a.SessionKey {
		t.Errorf("GetByID of the new session = %+v, %v, %v", got, ok, err)
	}
	for _, id := range []string{uuid.NewString(), "", "' OR 1=1 --", "%", `\`, "日本", string(make([]byte, 4096))} {
		if _, ok, err := f.idx.GetByID(id); err != nil || ok {
			t.Errorf("GetByID(%q) = %v, %v; want not found, no error", clip(id), ok, err)
		}
	}
}
