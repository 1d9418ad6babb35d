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

// TestTimedOutChildRunsOnce (SPEC §5): a subagent that runs past its
// runTimeoutSeconds ends "timed out" and that is announced into its
// parent. Its turn has an outcome: it is not a failure to retry, which
// ran the child's task again (the model paid for again, the whole timeout
// again) up to the retry limit, its results never heard (the parent's
// announcement taken once), then buried it as a dead letter.
func TestTimedOutChildRunsOnce(t *testing.T) {
	m := &model{started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, func(h *harness) {
		h.agent = func(o *agents.Options) {
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
		}
	})
	parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "98"}
	h.handle(in("tg", "98", "hello"))
	<-m.started
	h.drained()

	child := spawnedChild(t, h, parent, "3f6b2d8e-1a4c-4e9b-b7d0-5c2e8f1a9d30")
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Patch(h.ctx, child, func(e *sessions.Entry) error { e.RunTimeoutSeconds = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	m.mu.Lock()
	m.block = block // the child's model call outlives its timeout
	m.mu.Unlock()
	if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
		Message: sessions.UserText("the job", time.Now())}); err != nil {
		t.Fatal(err)
	}
	<-m.started // the child is working
	eventually(t, "the timed-out child's announcement", func() bool {
		for _, msg := range h.history(parent.String()) {
			if strings.Contains(msg.Text(), "status: timed out") {
				return true
			}
		}
		return false
	})
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	close(block) // the parent's turn on the announcement waited on it too
	h.drained()
	children := 0
	for _, r := range m.requests() {
		if strings.Contains(r.System, "You are a subagent") {
			children++
		}
	}
	if children != 1 {
		t.Errorf("the timed-out child's task went to the model %d times, want once", children)
	}
	if dls := letters(t, h); len(dls) > 0 {
		t.Errorf("the timed-out child was buried as a dead letter: %+v", dls)
	}
}
