package dispatch

import (
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
