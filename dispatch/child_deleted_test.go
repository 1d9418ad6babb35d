package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestDeletedChildNotRunAgainAfterRestart (SPEC §5, §3.7): a child with
// cleanup: delete announced its result and was deleted, and the process
// died before its own record was finished. At the next start the record
// is replayed into a child session that no longer exists: it must finish,
// not begin a fresh session under the child's key that runs the task
// again (the model paid again, a stray session that no parent knows).
func TestDeletedChildNotRunAgainAfterRestart(t *testing.T) {
	b := &childDoneFails{child: map[string]bool{}}
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(inner sessions.Backend) sessions.Backend { b.Backend = inner; return b }
		h.agent = func(o *agents.Options) {
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
		}
	})
	parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "98"}
	h.handle(in("tg", "98", "hello"))
	h.drained()

	child := spawnedChild(t, h, parent, "6a1e9c3b-4d2f-4b8e-a05c-7f3d1e2b9c40")
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Patch(h.ctx, child, func(e *sessions.Entry) error { e.SubagentCleanup = sessions.CleanupDelete; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
		Message: sessions.UserText("the job", time.Now())}); err != nil {
		t.Fatal(err)
	}
	childCalls := func() int {
		n := 0
		for _, r := range h.m.requests() {
			if strings.Contains(r.System, "You are a subagent") {
				n++
			}
		}
		return n
	}
	eventually(t, "the announcement answered", func() bool { return len(h.tg.sent()) == 2 })
	if _, ok, _ := st.Get(child); ok {
		t.Fatal("cleanup: delete left the child")
	}
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if n := childCalls(); n != 1 {
		t.Errorf("the deleted child's task went to the model %d times, want once", n)
	}
	st, err = h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := st.Get(child); ok {
		t.Errorf("the deleted child's session was begun again: %+v", e)
	}
}
