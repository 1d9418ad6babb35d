package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestManyLargeResultsQueuedBehindParent (SPEC §4, §5): several children
// with long results finish while their parent's turn runs; their
// announcements queue behind it (collect mode) and the parent must still
// answer them, within its context window.
func TestManyLargeResultsQueuedBehindParent(t *testing.T) {
	const window = 32000
	m := &model{started: make(chan struct{}, 64)}
	var announced atomic.Int32
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Collect, Debounce: time.Millisecond, Cap: 20, Drop: lanes.DropSummarize}), func(h *harness) {
		h.agent = func(o *agents.Options) {
			o.Defaults.ContextWindow = window
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error {
				err := h.d.Dispatch(ctx, a)
				if err == nil && !a.Subagent {
					announced.Add(1)
				}
				return err
			}
		}
	})
	m.reply = func(req llm.Request) (string, error) {
		if llm.EstimateRequest(req) > window {
			return "", fmt.Errorf("400 prompt is too long: %w", llm.ErrContextOverflow)
		}
		if strings.Contains(req.System, "You are a subagent") {
			return "BEGIN " + strings.Repeat("finding ", 12000), nil // ≈ 96 KB
		}
		return "ok", nil
	}
	parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "98"}
	h.handle(in("tg", "98", "hello"))
	<-m.started
	h.drained()

	block := make(chan struct{})
	m.mu.Lock()
	m.block = block
	m.mu.Unlock()
	h.handle(in("tg", "98", "long question")) // the parent is busy
	<-m.started
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	const n = 5
	for i := range n {
		child := spawnedChild(t, h, parent, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
			Message: sessions.UserText("the job", time.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the children's announcements queued", func() bool {
		// Each announced, and each child's own record finished.
		return announced.Load() == n && h.journal().Stats().Pending == 1+n
	})
	close(block)
	h.drained()
	for _, s := range h.tg.texts() {
		if strings.Contains(s, "too long") {
			t.Fatalf("the parent could not take its children's results: %q", s)
		}
	}
	for i := range n {
		key := fmt.Sprintf("subagent:00000000-0000-4000-8000-%012d", i)
		heard := false
		for _, r := range m.requests() {
			if !strings.Contains(r.System, "You are a subagent") && strings.Contains(strings.Join(lastUserTexts(r.Messages), "|"), key) {
				heard = true
			}
		}
		if !heard {
			t.Errorf("the parent's model never saw the result of %s", key)
		}
	}
}
