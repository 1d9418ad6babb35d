package sessionstest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// reopen opens another handle on f's storage, with f's clock and policy.
func (f *fixture) reopen() sessions.Index {
	f.t.Helper()
	return f.open(f.t, Options{Now: f.clk.Now, Reset: f.reset, Share: f.idx})
}

func testDurable(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	a, b, gone := f.key("a"), f.key("b"), f.key("gone")
	f.begin(a, origin("a"))
	f.begin(b, origin("b"))
	f.begin(gone, origin("gone"))
	f.clk.Advance(time.Minute)
	f.idx.AddCounters(a, sessions.Counters{InputTokens: 7, TotalTokens: 7, Messages: 2, Model: "m"})
	if _, err := f.idx.Patch(f.ctx, b, func(e *sessions.Entry) error { e.Label = "ops"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.idx.Reset(f.ctx, b, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.idx.Delete(f.ctx, gone); err != nil {
		t.Fatal(err)
	}
	f.flush()
	list, err := f.idx.List()
	if err != nil {
		t.Fatal(err)
	}
	// Another process sees exactly this state.
	other := f.reopen()
	got, err := other.List()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(list, got); diff != "" {
		t.Errorf("List through a second handle (-first +second):\n%s", diff)
	}
	for _, k := range []string{"a", "b", "gone"} {
		want, got := f.archived(f.key(k)), archivedOf(t, other, f, k)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Archived(%s) through a second handle (-first +second):\n%s", k, diff)
		}
	}
	if e, ok, err := other.GetByID(list[0].SessionID); err != nil || !ok || e.SessionKey != list[0].SessionKey {
		t.Errorf("GetByID through a second handle = %+v, %v, %v", e, ok, err)
	}
}

func archivedOf(t *testing.T, idx sessions.Index, f *fixture, peer string) []sessions.Archived {
	t.Helper()
	a, err := idx.Archived(f.key(peer))
	if err != nil {
		t.Fatalf("Archived(%s): %v", peer, err)
	}
	return a
}

func testTwoHandles(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	other := f.reopen()
	handles := []sessions.Index{f.idx, other}
	k, fresh := f.key("shared"), f.key("fresh")
	f.begin(k, origin("hello"))
	const each = 10
	created := make([]string, goroutines)
	// Two processes race on one entry (counters, touches, patches of
	// different fields) and create another key at once: nothing is lost,
	// and the new key gets one session.
	parallel(goroutines, func(i int) {
		idx := handles[i%2]
		e, _, err := idx.Begin(f.ctx, fresh, origin(fmt.Sprint("first ", i)))
		if err != nil {
			t.Error(err)
		}
		created[i] = e.SessionID
		switch i {
		case 0:
			if _, err := idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.Label = "ops"; return nil }); err != nil {
				t.Error(err)
			}
		case 1:
			if _, err := idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.ModelOverride = "big"; return nil }); err != nil {
				t.Error(err)
			}
		}
		for j := range each {
			idx.AddCounters(k, sessions.Counters{InputTokens: 1, TotalTokens: 2, Messages: 1})
			if j%3 == 0 {
				if _, _, err := idx.Begin(f.ctx, k, sessions.Origin{From: "u2"}); err != nil {
					t.Error(err)
				}
			}
			if j == each/2 {
				if err := idx.Flush(f.ctx); err != nil {
					t.Error(err)
				}
			}
		}
	})
	for _, idx := range handles {
		if err := idx.Flush(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	third := f.reopen()
	e, ok, err := third.Get(k)
	if err != nil || !ok {
		t.Fatalf("Get through a third handle = %v, %v", ok, err)
	}
	n := int64(goroutines * each)
	if e.InputTokens != n || e.TotalTokens != 2*n || e.MessageCount != int(n) {
		t.Errorf("counters in %d total %d messages %d; want %d, %d, %d", e.InputTokens, e.TotalTokens, e.MessageCount, n, 2*n, n)
	}
	if e.Label != "ops" || e.ModelOverride != "big" || e.LastFrom != "u2" {
		t.Errorf("label %q model %q last from %q: an update of one handle was lost", e.Label, e.ModelOverride, e.LastFrom)
	}
	for i, id := range created {
		if id != created[0] {
			t.Errorf("Begin %d (handle %d) got session %s, Begin 0 %s: two sessions for one key", i, i%2, id, created[0])
		}
	}
	if got, ok, err := third.Get(fresh); err != nil || !ok || got.SessionID != created[0] {
		t.Errorf("Get(fresh) through a third handle = %s, %v, %v; want %s", got.SessionID, ok, err, created[0])
	}
}
