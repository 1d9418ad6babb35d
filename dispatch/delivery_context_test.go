package dispatch

import (
	"sync/atomic"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestDeliveryContextFollowsReplies (seed 002, issue 27): a session's
// entry records where its latest reply was delivered — channel, account,
// chat and thread — once the platform accepted it, and a restart keeps it.
// A session whose replies are not sent (send policy deny) records none.
func TestDeliveryContextFollowsReplies(t *testing.T) {
	h := newHarness(t, "", nil)
	st, _ := h.mgr.Backend().Store("main")
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "91"}
	want := sessions.DeliveryContext{Channel: "tg", To: "91", AccountID: "default"}
	delivery := func() sessions.DeliveryContext {
		e, ok, err := st.Get(key)
		if err != nil || !ok {
			t.Fatalf("Get(%s): %v %v", key, ok, err)
		}
		return e.DeliveryContext
	}

	h.handle(in("tg", "91", "first"))
	h.drained()
	eventually(t, "the delivery context of the first reply", func() bool { return delivery() == want })

	h.restart()
	st, _ = h.mgr.Backend().Store("main")
	if got := delivery(); got != want {
		t.Errorf("after a restart: delivery context %+v, want %+v", got, want)
	}

	// A thread of the same chat is a session of its own; it records the
	// thread its reply went to.
	msg := in("tg", "91", "in the thread")
	msg.ThreadID = "5"
	h.handle(msg)
	h.drained()
	thread, err := key.WithThread(routing.Thread, "5")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the thread's delivery context", func() bool {
		e, ok, _ := st.Get(thread)
		return ok && e.DeliveryContext == sessions.DeliveryContext{Channel: "tg", To: "91", AccountID: "default", ThreadID: "5"}
	})

	denied := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "92"}
	h.handle(in("tg", "92", "hello"))
	h.drained()
	eventually(t, "the second chat's delivery context", func() bool {
		e, ok, _ := st.Get(denied)
		return ok && e.DeliveryContext.To == "92"
	})
	if _, err := st.Patch(h.ctx, denied, func(e *sessions.Entry) error {
		e.SendPolicy, e.DeliveryContext = sessions.SendDeny, sessions.DeliveryContext{}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h.handle(in("tg", "92", "unsent"))
	h.drained()
	h.restart()
	st, _ = h.mgr.Backend().Store("main")
	if e, _, _ := st.Get(denied); e.DeliveryContext != (sessions.DeliveryContext{}) {
		t.Errorf("send policy deny: delivery context %+v, want none (nothing was delivered)", e.DeliveryContext)
	}
}

// countingGets is a backend whose stores count Get calls.
type countingGets struct {
	sessions.Backend
	gets atomic.Int64
}

func (b *countingGets) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.Backend.Store(agentID)
	if err != nil {
		return nil, err
	}
	return countingGetsStore{AgentStore: st, b: b}, nil
}

type countingGetsStore struct {
	sessions.AgentStore
	b *countingGets
}

func (s countingGetsStore) Get(key routing.Key) (sessions.Entry, bool, error) {
	s.b.gets.Add(1)
	return s.AgentStore.Get(key)
}

// TestDeliveryContextNeedsNoRead: recording where a turn's reply went
// reads no entry: the turn's Begin told the outbox what the entry held
// (a new session: nothing), so the first reply writes the place at once
// and the next ones, to the same place, write and read nothing. The one
// read left is the lanes' of the new session's queue settings, at its
// first message.
func TestDeliveryContextNeedsNoRead(t *testing.T) {
	counting := &countingGets{}
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend { counting.Backend = b; return counting }
	})
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "93"}
	want := sessions.DeliveryContext{Channel: "tg", To: "93", AccountID: "default"}
	for _, text := range []string{"first", "second"} {
		h.handle(in("tg", "93", text))
		h.drained()
	}
	if n := counting.gets.Load(); n != 1 {
		t.Errorf("%d entry reads for two turns of a new session, want 1 (the lanes' queue settings)", n)
	}
	st, _ := h.mgr.Backend().Store("main")
	eventually(t, "the delivery context", func() bool {
		e, ok, _ := st.Get(key)
		return ok && e.DeliveryContext == want
	})
}
