package pgstore

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// peekRecorder is a QueuePeek wanting the records of want and recording
// what it got.
type peekRecorder struct {
	mu    sync.Mutex
	got   map[string]sessions.Entry
	found map[string]bool
}

func (r *peekRecorder) peek(want ...string) *sessions.QueuePeek {
	return &sessions.QueuePeek{
		Want: func(id string) bool {
			for _, w := range want {
				if w == id {
					return true
				}
			}
			return false
		},
		Got: func(id string, e sessions.Entry, found bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.got == nil {
				r.got, r.found = map[string]sessions.Entry{}, map[string]bool{}
			}
			r.got[id], r.found[id] = e, found
		},
	}
}

// TestAcceptReadsQueueSettings (issue 21): an accept asked for the queue
// settings of its record's session (sessions.QueuePeek) reads them in its
// own statement — the session's /queue override, or none for a key without
// an entry — in the accept's one round trip, for Accept and for a batch;
// a record not wanted gets nothing, and a duplicate is still reported.
func TestAcceptReadsQueueSettings(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := db.Delivery(DeliveryOptions{})
	defer d.Close()
	ctx := ctxT(t)
	key, err := routing.PeerKey("main", "telegram", "", routing.Direct, "7001")
	if err != nil {
		t.Fatal(err)
	}
	st := db.Store("main", idle)
	if _, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram"}); err != nil {
		t.Fatal(err)
	}
	set, err := st.Patch(ctx, key, func(e *sessions.Entry) error {
		e.QueueMode, e.QueueDebounceMs, e.QueueCap, e.QueueDrop = "collect", 1500, 7, "old"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id, k string) sessions.Record {
		return sessions.Record{ID: id, AgentID: "main", SessionKey: k, Payload: json.RawMessage(`{"text":"hi"}`)}
	}
	check := func(r *peekRecorder, id string, want sessions.Entry, found bool) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		got, ok := r.got[id]
		if !ok {
			t.Errorf("%s: nothing read", id)
			return
		}
		if r.found[id] != found || got.QueueMode != want.QueueMode || got.QueueDebounceMs != want.QueueDebounceMs ||
			got.QueueCap != want.QueueCap || got.QueueDrop != want.QueueDrop || got.SessionID != want.SessionID {
			t.Errorf("%s: read %+v (found %v), want the queue fields of %+v (found %v)", id, got, r.found[id], want, found)
		}
	}

	// Accept: one round trip, the override read.
	r := &peekRecorder{}
	before := opCounts(db, OpAccept, OpIndex)
	if dup, err := d.Accept(sessions.WithQueuePeek(ctx, r.peek("a1")), rec("a1", key.String())); err != nil || dup {
		t.Fatalf("Accept = %v, %v", dup, err)
	}
	after := opCounts(db, OpAccept, OpIndex)
	if n := after[OpAccept][0] - before[OpAccept][0]; n != 1 {
		t.Errorf("Accept took %d round trips, want 1", n)
	}
	if n := after[OpIndex][0] - before[OpIndex][0]; n != 0 {
		t.Errorf("Accept read the index in %d round trips of its own", n)
	}
	check(r, "a1", set, true)

	// A duplicate is still one, and still reads.
	r = &peekRecorder{}
	if dup, err := d.Accept(sessions.WithQueuePeek(ctx, r.peek("a1")), rec("a1", key.String())); err != nil || !dup {
		t.Fatalf("Accept of a known id = %v, %v; want a duplicate", dup, err)
	}
	check(r, "a1", set, true)

	// A batch: the wanted records only; a key without an entry has none.
	r = &peekRecorder{}
	dups, errs, wait := d.AcceptDeferredAll(sessions.WithQueuePeek(ctx, r.peek("b1", "b3")), []sessions.Record{
		rec("b1", key.String()), rec("b2", key.String()), rec("b3", "agent:main:telegram:direct:7002")})
	for i := range dups {
		if dups[i] || errs[i] != nil {
			t.Fatalf("batch record %d: dup %v, %v", i, dups[i], errs[i])
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	check(r, "b1", set, true)
	check(r, "b3", sessions.Entry{}, false)
	if _, ok := r.got["b2"]; ok {
		t.Error("b2 was not wanted but got settings")
	}
	if n := len(r.got); n != 2 {
		t.Errorf("%d records got settings, want 2", n)
	}
	// Without a peek the accept reads nothing more (acceptSQL alone).
	if dup, err := d.Accept(context.WithoutCancel(ctx), rec("c1", key.String())); err != nil || dup {
		t.Fatalf("Accept without a peek = %v, %v", dup, err)
	}
}
