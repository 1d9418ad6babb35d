package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// windowModel is a provider with a context window: a request larger is
// refused as a context overflow. A subagent answers a long result; the
// parent's first call waits for release and calls sessions_list (the
// run goes on to another model call), its others answer "ok".
type windowModel struct {
	window   int64
	started  chan struct{}
	release  chan struct{}
	released sync.Once
	mu       sync.Mutex
	parent   int
	reqs     []llm.Request
}

func (m *windowModel) Name() string { return "fake" }

func (m *windowModel) Stream(_ context.Context, req llm.Request, _ func(llm.Event)) (sessions.Message, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	sub := strings.Contains(req.System, "You are a subagent")
	if !sub {
		m.parent++
	}
	first := !sub && m.parent == 1
	m.mu.Unlock()
	if llm.EstimateRequest(req) > m.window {
		return sessions.Message{}, fmt.Errorf("400 prompt is too long: %w", llm.ErrContextOverflow)
	}
	msg := textMsg("ok")
	switch {
	case sub:
		msg = textMsg("BEGIN " + strings.Repeat("finding ", 12000)) // ≈ 96 KB
	case first:
		close(m.started)
		<-m.release
		msg = sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopToolUse, Content: []sessions.Content{
			{Type: sessions.BlockToolCall, ID: "call_1", Name: "sessions_list", Arguments: []byte(`{}`)}}}
	}
	msg.Usage = &sessions.Usage{Input: 1, Output: 1, TotalTokens: 2}
	return msg, nil
}

func (m *windowModel) open() { m.released.Do(func() { close(m.release) }) }

func (m *windowModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.reqs...)
}

// TestManyLargeResultsWhileParentRunsInSteerMode (SPEC §4, §5): in steer
// mode, children's results that arrive while their parent's run is active
// each reach the parent's model, within its window. They were handed to
// the running turn at its next model call as chat messages, whose text
// they have none of: five empty user messages went into the transcript,
// every result lost (several whole ones would outgrow the window, which
// is why collect mode gives each its own turn since 21b8cfc).
func TestManyLargeResultsWhileParentRunsInSteerMode(t *testing.T) {
	for _, mode := range []lanes.Mode{lanes.Steer, lanes.SteerBacklog} {
		t.Run(string(mode), func(t *testing.T) { manyResultsWhileParentRuns(t, mode) })
	}
}

func manyResultsWhileParentRuns(t *testing.T, mode lanes.Mode) {
	const window = 32000
	m := &windowModel{window: window, started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(m.open)
	var announced atomic.Int32
	h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: mode, Debounce: time.Millisecond, Cap: 20, Drop: lanes.DropSummarize}), func(h *harness) {
		h.agent = func(o *agents.Options) {
			o.Providers = map[string]llm.Provider{"fake": m}
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
	parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "46"}
	h.handle(in("tg", "46", "long question"))
	<-m.started // the parent's run is active
	const n = 5
	for i := range n {
		child := spawnedChild(t, h, parent, fmt.Sprintf("00000000-0000-4000-8000-%012d", 100+i))
		if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
			Message: sessions.UserText("the job", time.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the children's announcements queued", func() bool {
		return announced.Load() == n && h.journal().Stats().Pending == 1+n
	})
	m.open()
	h.drained()
	for _, s := range h.tg.texts() {
		if strings.Contains(s, "too long") {
			t.Fatalf("the parent could not take its children's results: %q", s)
		}
	}
	for i := range n {
		key := fmt.Sprintf("subagent:00000000-0000-4000-8000-%012d", 100+i)
		heard := false
		for _, r := range m.requests() {
			if strings.Contains(r.System, "You are a subagent") || llm.EstimateRequest(r) > window {
				continue
			}
			for _, msg := range r.Messages {
				heard = heard || (strings.Contains(msg.Text(), "[subagent result]") && strings.Contains(msg.Text(), key))
			}
		}
		if !heard {
			t.Errorf("the parent's model never saw the result of %s within its window", key)
		}
	}
}
