package dispatch

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// recordingBackend's stores implement sessions.DeliveryRecorder over the
// files store (a Patch of the delivery context), failing the writes while
// fail is set, and count what the outbox used.
type recordingBackend struct {
	sessions.Backend
	mu      sync.Mutex
	fail    bool
	records int
	patches int
}

func (b *recordingBackend) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.Backend.Store(agentID)
	if err != nil {
		return nil, err
	}
	return recordingStore{AgentStore: st, b: b}, nil
}

type recordingStore struct {
	sessions.AgentStore
	b *recordingBackend
}

func (s recordingStore) Patch(ctx context.Context, key routing.Key, fn func(*sessions.Entry) error) (sessions.Entry, error) {
	s.b.mu.Lock()
	s.b.patches++
	s.b.mu.Unlock()
	return s.AgentStore.Patch(ctx, key, fn)
}

func (s recordingStore) RecordDelivery(ctx context.Context, key routing.Key, dc sessions.DeliveryContext) error {
	s.b.mu.Lock()
	s.b.records++
	fail := s.b.fail
	s.b.mu.Unlock()
	if fail {
		return errors.New("storage down")
	}
	_, err := s.AgentStore.Patch(ctx, key, func(e *sessions.Entry) error { e.DeliveryContext = dc; return nil })
	if errors.Is(err, sessions.ErrNotFound) {
		err = nil
	}
	return err
}

func (b *recordingBackend) counts() (records, patches int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records, b.patches
}

// TestDeliveryContextThroughRecorder: a store that records deliveries
// (sessions.DeliveryRecorder, PostgreSQL) gets the place through it, never
// through Patch, once per place; a write that failed is tried again at the
// next reply to that place rather than taken as done.
func TestDeliveryContextThroughRecorder(t *testing.T) {
	rb := &recordingBackend{fail: true}
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend { rb.Backend = b; return rb }
	})
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "94"}
	want := sessions.DeliveryContext{Channel: "tg", To: "94", AccountID: "default"}
	st, _ := h.mgr.Backend().Store("main")

	h.handle(in("tg", "94", "first"))
	h.drained()
	eventually(t, "the failed record", func() bool { r, _ := rb.counts(); return r == 1 })
	if e, _, _ := st.Get(key); e.DeliveryContext != (sessions.DeliveryContext{}) {
		t.Fatalf("a failed record was written: %+v", e.DeliveryContext)
	}

	rb.mu.Lock()
	rb.fail = false
	rb.mu.Unlock()
	for _, text := range []string{"second", "third"} {
		h.handle(in("tg", "94", text))
		h.drained()
	}
	eventually(t, "the delivery context", func() bool {
		e, ok, _ := st.Get(key)
		return ok && e.DeliveryContext == want
	})
	if records, patches := rb.counts(); records != 2 || patches != 0 {
		t.Errorf("%d records and %d patches for three replies to one place (the first failed), want 2 and 0", records, patches)
	}
}
