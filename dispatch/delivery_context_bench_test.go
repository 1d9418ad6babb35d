package dispatch

import (
	"context"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// BenchmarkNoteDeliveredSamePlace is the outbox's cost, per delivered
// reply, of keeping the session entry's delivery context when the reply
// went where the previous one did (the common case: no index write).
func BenchmarkNoteDeliveredSamePlace(b *testing.B) {
	d, mgr := benchDispatcher(b, &model{}, Runtime{Queue: QueueConfig{Mode: "followup"}})
	ctx := context.Background()
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Group, Peer: "-100123", ThreadKind: routing.Topic, Thread: "7"}
	st, err := mgr.Backend().Store("main")
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "tg"}); err != nil {
		b.Fatal(err)
	}
	rp := sessions.Reply{ID: "r1", AgentID: "main", SessionKey: key.String()}
	a := channels.Address{Channel: "tg", AccountID: "default", ChatID: "-100123", ThreadID: "7"}
	d.outbox.noteDelivered(ctx, rp, a) // records the place once
	e, _, err := st.Get(key)
	if err != nil || e.DeliveryContext != deliveryContextOf(a) {
		b.Fatalf("delivery context %+v (%v), want %+v", e.DeliveryContext, err, deliveryContextOf(a))
	}
	b.ReportAllocs()
	for b.Loop() {
		d.outbox.noteDelivered(ctx, rp, a)
	}
}
