package dispatch

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// lateStopModel is a provider whose subagent calls notice a cancellation
// late: the first one returns only once release is closed (then with the
// context's error, as a provider tearing a request down does), the later
// ones at once. Other calls answer "re: ..." at once.
type lateStopModel struct {
	mu       sync.Mutex
	child    int
	started  chan struct{}
	release  chan struct{}
	released sync.Once
}

func (m *lateStopModel) Name() string { return "fake" }

func (m *lateStopModel) Stream(ctx context.Context, req llm.Request, _ func(llm.Event)) (sessions.Message, error) {
	msg := textMsg("re: " + strings.Join(lastUserTexts(req.Messages), " + "))
	if strings.Contains(req.System, "You are a subagent") {
		m.mu.Lock()
		m.child++
		first := m.child == 1
		m.mu.Unlock()
		if first {
			close(m.started)
			<-m.release
			if err := ctx.Err(); err != nil {
				return sessions.Message{}, err
			}
		}
		msg = textMsg("child result")
	}
	msg.Usage = &sessions.Usage{Input: 1, Output: 1, TotalTokens: 2}
	return msg, nil
}

func (m *lateStopModel) open() { m.released.Do(func() { close(m.release) }) }

func (m *lateStopModel) childCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.child
}

// TestStoppedChildNotRunAfterRestart (SPEC §4 /stop, §3.7): a child /stop
// stopped stays stopped when the daemon stops before the child's run has
// ended (its provider call still tearing down): the run, cancelled under
// a shutdown, was taken for one the shutdown interrupted, its record left
// pending, and at the next start the child ran its task again and
// announced the result into the chat that had said stop.
func TestStoppedChildNotRunAfterRestart(t *testing.T) {
	m := &lateStopModel{started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(m.open)
	h := newHarness(t, "", nil, func(h *harness) {
		h.agent = func(o *agents.Options) {
			o.Providers = map[string]llm.Provider{"fake": m}
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
		}
	})
	parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "44"}
	h.handle(in("tg", "44", "hello"))
	h.drained()
	child := spawnedChild(t, h, parent, "2d8f4a6c-9b1e-4f3a-8c57-1e0b9d4f7a20")
	if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
		Message: sessions.UserText("the job", time.Now())}); err != nil {
		t.Fatal(err)
	}
	<-m.started
	h.handle(in("tg", "44", "/stop"))
	d := h.d
	closed := make(chan struct{})
	go func() { h.close(); close(closed) }()
	eventually(t, "the shutdown to begin", func() bool { return d.closing.Load() })
	m.open() // the child's run ends now, cancelled
	<-closed
	h.start()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if n := m.childCalls(); n != 1 {
		t.Errorf("the stopped child's task went to the model %d times, want once", n)
	}
	for _, s := range h.tg.texts() {
		if strings.Contains(s, "child result") {
			t.Errorf("chat got %q: the stopped child's result was answered after a restart", h.tg.texts())
		}
	}
	for _, msg := range h.history(parent.String()) {
		if strings.Contains(msg.Text(), "[subagent result]") {
			t.Errorf("the stopped child announced after a restart: %q", msg.Text())
		}
	}
}
