package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

func record(id string) sessions.Record {
	return sessions.Record{ID: id, AgentID: "main", SessionKey: "agent:main:main", Payload: json.RawMessage(`{"text":"hi"}`)}
}

// Records accepted together share one WAL flush: every wait returns nil,
// one barrier serves them all, and the records are visible to another
// connection (a replica's) before any wait ran.
func TestAcceptDeferredSharesOneFlush(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := db.Delivery(DeliveryOptions{})
	defer d.Close()
	ctx := ctxT(t)
	var waits []func() error
	for i := range 10 {
		dup, wait, err := d.AcceptDeferred(ctx, record(fmt.Sprint("r", i)))
		if err != nil || dup {
			t.Fatalf("AcceptDeferred r%d = dup %v, %v", i, dup, err)
		}
		waits = append(waits, wait)
	}
	// Another connection (a replica's) sees them.
	var pending int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_records WHERE state = 'pending'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 10 {
		t.Fatalf("another connection sees %d pending records before the waits, want 10", pending)
	}
	for i, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	if n := d.barrier.flushes.Load(); n != 1 {
		t.Errorf("%d WAL flushes for one batch, want 1", n)
	}
	// A duplicate is reported as one and its wait flushes on its own.
	dup, wait, err := d.AcceptDeferred(ctx, record("r3"))
	if err != nil || !dup {
		t.Fatalf("AcceptDeferred of a known id = dup %v, %v; want a duplicate", dup, err)
	}
	if err := wait(); err != nil {
		t.Fatalf("duplicate's wait: %v", err)
	}
	// Accepted after the flush: a new barrier.
	_, wait, err = d.AcceptDeferred(ctx, record("r10"))
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if n := d.barrier.flushes.Load(); n != 2 {
		t.Errorf("%d WAL flushes after a second batch, want 2", n)
	}
	if dup, err := d.Accept(ctx, record("r10")); err != nil || !dup {
		t.Errorf("Accept after AcceptDeferred = dup %v, %v; want a duplicate", dup, err)
	}
}

// A wait that cannot reach the server fails with a storage error (the
// adapter then acknowledges nothing), never nil.
func TestAcceptDeferredWaitFailsWithoutServer(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := db.Delivery(DeliveryOptions{})
	_, wait, err := d.AcceptDeferred(ctxT(t), record("r1"))
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	db.pool.Close()
	err = wait()
	if err == nil {
		t.Fatal("wait on a closed pool returned nil")
	}
	if !errors.Is(err, sessions.ErrStorage) {
		t.Errorf("wait error %v does not wrap sessions.ErrStorage", err)
	}
}

// Lazy commits are committed: what Begin's touch, AddCounters and
// AppendLazy wrote is read back at once through another connection, and a
// touch of a session rolled over by another caller is not applied.
func TestLazyWritesAreCommitted(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	st := db.Store("main", nil)
	key := mustKey(t, "main", "telegram", "42")
	e, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", To: "42"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", To: "43", Name: "Ann"}); err != nil {
		t.Fatal(err)
	}
	st.AddCounters(key, sessions.Counters{InputTokens: 5, OutputTokens: 7, TotalTokens: 12, Messages: 2, Model: "m1"})
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendLazy(ctx, text(sessions.RoleUser, "hello")); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil { // the counters are written in the background
		t.Fatal(err)
	}

	// A second DB on the same database: its own pool and no cache.
	db2, err := Open(ctx, Options{URL: url, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got, ok, err := db2.Index("main", nil).Get(ctx, key)
	if err != nil || !ok {
		t.Fatalf("Get from another pool = %v, %v", ok, err)
	}
	if got.LastTo != "43" || got.DisplayName != "Ann" || got.InputTokens != 5 || got.OutputTokens != 7 ||
		got.TotalTokens != 12 || got.MessageCount != 2 || got.Model != "m1" {
		t.Errorf("entry read from another pool misses lazy writes: %+v", got)
	}
	tr2, err := db2.Transcript(e.SessionID, transcript.Header{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tr2.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 1 || c.Messages[0].Content[0].Text != "hello" {
		t.Errorf("context read from another pool = %+v, want the lazily appended message", c.Messages)
	}

	// The touch applies only to the session id it judged fresh.
	x := db.Index("main", nil)
	k, _ := x.keyString(key)
	if _, ok, err := x.touchLazy(ctx, touchSQL, nil, k, "4f7c2a9e-0000-4000-8000-0000000000ff", sessions.Origin{At: db.clock()}, db.clock(), nil); err != nil || ok {
		t.Errorf("touchLazy of another session id = %v, %v; want not applied", ok, err)
	}
	if err := x.AddCounters(ctx, routing.Key{Agent: "main", Main: "nobody"}, sessions.Counters{Messages: 1}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("AddCounters of an unknown key = %v, want ErrNotFound", err)
	}
}

// A barrier issued while none is needed is free: wait on a ticket already
// flushed runs no query.
func TestWALBarrierSkipsFlushedTickets(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	w := &walBarrier{db: db}
	ctx := context.Background()
	a, b := w.note(), w.note()
	if err := w.wait(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(ctx, b); err != nil {
		t.Fatal(err)
	}
	if w.pending() {
		t.Error("pending after every ticket was flushed")
	}
	if n := w.flushes.Load(); n != 1 {
		t.Errorf("%d flushes for two tickets noted together, want 1", n)
	}
}
