package pgstore

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// RecordDelivery leaves the entry as a Patch of its DeliveryContext does
// (the rest unchanged, updatedAt moved), skips a key without a session and
// refuses another agent's key.
func TestRecordDeliveryIsPatchOfDeliveryContext(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	db, err := Open(context.Background(), Options{URL: pgtest.NewDatabase(t), MaxConns: 10, Logger: zaptest.NewLogger(t), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	ctx := ctxT(t)
	st := db.Store("main", nil)
	key := mustKey(t, "main", "telegram", "-100")
	patched := mustKey(t, "main", "telegram", "-200")
	for _, k := range []routing.Key{key, patched} {
		if _, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "group", To: "-1", From: "u1"}); err != nil {
			t.Fatal(err)
		}
	}
	clock.t = clock.t.Add(time.Minute)
	dc := sessions.DeliveryContext{Channel: "telegram", To: "-100", AccountID: "default", ThreadID: "7"}

	if err := st.RecordDelivery(ctx, key, dc); err != nil {
		t.Fatalf("record delivery: %v", err)
	}
	if _, err := st.Patch(ctx, patched, func(e *sessions.Entry) error { e.DeliveryContext = dc; return nil }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := st.Get(key)
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	want, _, _ := st.Get(patched)
	if got.DeliveryContext != dc || !got.UpdatedAt.Equal(clock.t) {
		t.Fatalf("recorded: %+v at %v, want %+v at %v", got.DeliveryContext, got.UpdatedAt, dc, clock.t)
	}
	// The same as the patched session, but for what differs by key.
	got.SessionKey, got.SessionID, got.LastTo = want.SessionKey, want.SessionID, want.LastTo
	if got != want {
		t.Fatalf("recorded entry differs from the patched one:\n got %+v\nwant %+v", got, want)
	}

	// A key without a session: skipped, nothing created.
	none := mustKey(t, "main", "telegram", "-300")
	if err := st.RecordDelivery(ctx, none, dc); err != nil {
		t.Fatalf("record delivery of a key without a session: %v", err)
	}
	if _, ok, _ := st.Get(none); ok {
		t.Fatal("recording a delivery created a session")
	}

	// Another agent's key: refused.
	if err := st.RecordDelivery(ctx, mustKey(t, "other", "telegram", "-100"), dc); err == nil {
		t.Fatal("another agent's key was accepted")
	}
}
