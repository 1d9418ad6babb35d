package sessionstest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// goroutines is how many callers the concurrency cases run at once.
const goroutines = 20

// parallel runs fn(i) for i < n at once and waits for all of them.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

func testCounters(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	e0, _ := f.begin(k, origin("hello"))
	f.clk.Advance(time.Minute)
	f.idx.AddCounters(k, sessions.Counters{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Messages: 2,
		ContextTokens: 100, Model: "m1", Provider: "p1"})
	// Zero context tokens and empty model or provider leave the values.
	f.idx.AddCounters(k, sessions.Counters{InputTokens: 1, TotalTokens: 1})
	want := e0
	want.InputTokens, want.OutputTokens, want.TotalTokens, want.MessageCount = 11, 5, 16, 2
	want.ContextTokens, want.Model, want.Provider = 100, "m1", "p1"
	want.UpdatedAt = f.clk.Now() // and lastInteractionAt stays: counters are not input
	if diff := cmp.Diff(want, f.get(k)); diff != "" {
		t.Errorf("after AddCounters, before Flush (-want +got):\n%s", diff)
	}
	f.flush()
	if diff := cmp.Diff(want, f.get(k)); diff != "" {
		t.Errorf("after Flush (-want +got):\n%s", diff)
	}
	// A key without a session gets no entry from counters.
	f.idx.AddCounters(f.key("nobody"), sessions.Counters{Messages: 1})
	f.flush()
	f.absent(f.key("nobody"))
}

func testCountersConcurrent(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	f.begin(k, origin("hello"))
	const each = 10
	// Counters, touches and a Patch race on one entry: nothing is lost.
	parallel(goroutines+2, func(i int) {
		switch i {
		case goroutines:
			if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.Label = "ops"; return nil }); err != nil {
				t.Error(err)
			}
		case goroutines + 1:
			for range each {
				if _, _, err := f.idx.Begin(f.ctx, k, sessions.Origin{From: "u2"}); err != nil {
					t.Error(err)
				}
			}
		default:
			for range each {
				f.idx.AddCounters(k, sessions.Counters{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, Messages: 1})
			}
		}
	})
	f.flush()
	e := f.get(k)
	n := int64(goroutines * each)
	if e.InputTokens != n || e.OutputTokens != 2*n || e.TotalTokens != 3*n || e.MessageCount != int(n) {
		t.Errorf("counters in %d out %d total %d messages %d; want %d, %d, %d, %d",
			e.InputTokens, e.OutputTokens, e.TotalTokens, e.MessageCount, n, 2*n, 3*n, n)
	}
	if e.Label != "ops" || e.LastFrom != "u2" {
		t.Errorf("label %q last from %q: a concurrent Patch or Begin was lost", e.Label, e.LastFrom)
	}
}

// hostilePeers are peer ids a chat platform might hand over: quotes, SQL,
// separators, path tricks, control bytes, scripts of every kind, the
// longest accepted.
var hostilePeers = []string{
	`it's "quoted"`,
	`'; DROP TABLE entries; --`,
	`a:b/c\d%20..%2F..`,
	"../../etc/passwd",
	"tab\tnew\nline\x00nul\x7f",
	"日本語 🙂 ñ Ελληνικά עברית",
	"not utf-8: \xff\xfe é\xc3",
	"$(rm -rf /) ${HOME} `id`",
	strings.Repeat("é", routing.MaxPeerLen/2),
	strings.Repeat("x", routing.MaxPeerLen),
}

func testHostile(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	keys := map[string]sessions.Entry{}
	for i, peer := range hostilePeers {
		k := f.key(peer)
		// Text from a chat is stored cleaned (Origin.Clean), never refused.
		o := sessions.Origin{Channel: "telegram", From: peer + "\xff", Name: "\x00" + peer, To: peer, Title: peer}
		label := o.Clean().Name
		e, info := f.begin(k, o)
		if e.LastFrom != o.Clean().From || e.LastTo != o.Clean().To {
			t.Errorf("peer %d: sender %q chat %q, want them cleaned: %q %q", i, e.LastFrom, e.LastTo, o.Clean().From, o.Clean().To)
		}
		if !info.Created || e.SessionKey != k.String() || e.DisplayName != label || e.Title != sessions.MakeTitle(o.Clean().Title) {
			t.Errorf("peer %d: Begin gave key %q name %q title %q, created %v", i, e.SessionKey, e.DisplayName, e.Title, info.Created)
		}
		if back, err := routing.Parse(e.SessionKey); err != nil || back != k {
			t.Errorf("peer %d: stored key %q parses to %+v, %v; want %+v", i, e.SessionKey, back, err, k)
		}
		f.same(fmt.Sprintf("peer %d", i), e)
		p, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.Label = label; return nil })
		if err != nil || p.Label != label {
			t.Errorf("peer %d: Patch label: %q, %v", i, p.Label, err)
		}
		f.same(fmt.Sprintf("peer %d Patch", i), p)
		keys[k.String()] = p
	}
	l, err := f.idx.List()
	if err != nil || len(l) != len(hostilePeers) {
		t.Fatalf("List = %d entries, %v; want %d", len(l), err, len(hostilePeers))
	}
	for _, e := range l {
		if diff := cmp.Diff(keys[e.SessionKey], e); diff != "" {
			t.Errorf("List entry %q (-want +got):\n%s", clip(e.SessionKey), diff)
		}
	}
	// Reset, delete and switch back every one: archives stay per key.
	for i, peer := range hostilePeers {
		k := f.key(peer)
		old := keys[k.String()]
		if _, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true}); err != nil {
			t.Fatalf("peer %d: Reset: %v", i, err)
		}
		if err := f.idx.Delete(f.ctx, k); err != nil {
			t.Fatalf("peer %d: Delete: %v", i, err)
		}
		if a := f.archived(k); len(a) != 2 || a[1].SessionID != old.SessionID || a[0].Reason != "deleted" {
			t.Errorf("peer %d: Archived = %+v", i, a)
		}
		back, err := f.idx.Switch(f.ctx, k, old.SessionID)
		if err != nil || back.SessionID != old.SessionID || back.SessionKey != k.String() {
			t.Errorf("peer %d: Switch back = %+v, %v", i, back, err)
		}
	}
}

func testConcurrentCreate(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	got := make([]sessions.Entry, goroutines)
	infos := make([]sessions.BeginInfo, goroutines)
	parallel(goroutines, func(i int) {
		e, info, err := f.idx.Begin(f.ctx, k, origin(fmt.Sprint("message ", i)))
		if err != nil {
			t.Error(err)
		}
		got[i], infos[i] = e, info
	})
	created := 0
	for i := range got {
		if infos[i].Created {
			created++
		}
		if got[i].SessionID != got[0].SessionID {
			t.Errorf("Begin %d got session %s, Begin 0 %s: two sessions for one key", i, got[i].SessionID, got[0].SessionID)
		}
	}
	if created != 1 {
		t.Errorf("%d Begins reported Created, want exactly 1", created)
	}
	if l, err := f.idx.List(); err != nil || len(l) != 1 || l[0].SessionID != got[0].SessionID {
		t.Errorf("List = %+v, %v; want the one session", l, err)
	}
	if a := f.archived(k); len(a) != 0 {
		t.Errorf("Archived = %v, want none", ids(a))
	}
}

func testConcurrentRollover(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(10))
	k := f.key("g1")
	e0, _ := f.begin(k, origin("hello"))
	f.clk.Advance(11 * time.Minute)
	got := make([]sessions.Entry, goroutines)
	infos := make([]sessions.BeginInfo, goroutines)
	parallel(goroutines, func(i int) {
		e, info, err := f.idx.Begin(f.ctx, k, origin("again"))
		if err != nil {
			t.Error(err)
		}
		got[i], infos[i] = e, info
	})
	rolled := 0
	for i := range got {
		if infos[i].ResetReason != "" {
			rolled++
		}
		if got[i].SessionID == e0.SessionID || got[i].SessionID != got[0].SessionID {
			t.Errorf("Begin %d got session %s (Begin 0: %s, stale: %s)", i, got[i].SessionID, got[0].SessionID, e0.SessionID)
		}
	}
	if rolled != 1 {
		t.Errorf("%d Begins reported a reset, want exactly 1", rolled)
	}
	if a := f.archived(k); len(a) != 1 || a[0].SessionID != e0.SessionID {
		t.Errorf("Archived = %v, want only the stale session %s", ids(a), e0.SessionID)
	}
}

func testConcurrentKeys(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	parallel(goroutines, func(i int) {
		k := f.key(fmt.Sprint("peer-", i))
		for range 3 {
			if _, _, err := f.idx.Begin(f.ctx, k, origin("hi")); err != nil {
				t.Error(err)
			}
			f.idx.AddCounters(k, sessions.Counters{Messages: 1})
			if _, err := f.idx.List(); err != nil {
				t.Error(err)
			}
		}
	})
	f.flush()
	l, err := f.idx.List()
	if err != nil || len(l) != goroutines {
		t.Fatalf("List = %d entries, %v; want %d", len(l), err, goroutines)
	}
	seen := map[string]bool{}
	for _, e := range l {
		if e.MessageCount != 3 || seen[e.SessionID] {
			t.Errorf("entry %s: %d messages (want 3), id seen before %v", e.SessionKey, e.MessageCount, seen[e.SessionID])
		}
		seen[e.SessionID] = true
	}
}
