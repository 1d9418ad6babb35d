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

// lateStopModel is a provider whose first subagent call (or, with
// parent set, first call of a chat's session) notices a cancellation
// late: it returns only once release is closed, then with the context's
// error, as a provider tearing a request down does. Other calls answer at
// once: a subagent "child result", a chat "re: ...".
type lateStopModel struct {
	parent   bool
	mu       sync.Mutex
	child    int
	chat     int
	started  chan struct{}
	release  chan struct{}
	released sync.Once
}

func (m *lateStopModel) Name() string { return "fake" }

func (m *lateStopModel) Stream(ctx context.Context, req llm.Request, _ func(llm.Event)) (sessions.Message, error) {
	msg := textMsg("re: " + strings.Join(lastUserTexts(req.Messages), " + "))
	sub := strings.Contains(req.System, "You are a subagent")
	m.mu.Lock()
	if sub {
		m.child++
		msg = textMsg("child result")
	} else {
		m.chat++
	}
	late := (sub && !m.parent && m.child == 1) || (!sub && m.parent && m.chat == 1)
	m.mu.Unlock()
	if late {
		close(m.started)
		<-m.release
		if err := ctx.Err(); err != nil {
			return sessions.Message{}, err
		}
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

func (m *lateStopModel) chatCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.chat
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

// TestStoppedTurnNotRunAfterRestart (SPEC §4 /stop, §3.7): a message
// whose turn /stop stopped stays unanswered when the daemon stops before
// the turn has ended (its provider call still tearing down): the turn,
// cancelled under a shutdown, was taken for one the shutdown interrupted,
// its record left pending, and at the next start the message the person
// had stopped was answered.
func TestStoppedTurnNotRunAfterRestart(t *testing.T) {
	m := &lateStopModel{parent: true, started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(m.open)
	h := newHarness(t, "", nil, func(h *harness) {
		h.agent = func(o *agents.Options) { o.Providers = map[string]llm.Provider{"fake": m} }
	})
	h.handle(in("tg", "45", "write me a long essay"))
	<-m.started
	h.handle(in("tg", "45", "/stop"))
	d := h.d
	closed := make(chan struct{})
	go func() { h.close(); close(closed) }()
	eventually(t, "the shutdown to begin", func() bool { return d.closing.Load() })
	m.open() // the stopped turn's run ends now, cancelled
	<-closed
	h.start()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if n := m.chatCalls(); n != 1 {
		t.Errorf("the stopped message went to the model %d times, want once", n)
	}
	if got := h.tg.texts(); len(got) != 1 || !strings.HasPrefix(got[0], "Stopped.") {
		t.Errorf("chat got %q, want only the answer to /stop", got)
	}
}
