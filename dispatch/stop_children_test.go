package dispatch

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestStopStopsChildren (SPEC §4 /stop, §5): /stop in a chat cancels
// the subagents its session started as well as its own run: a child
// still working would otherwise announce its result into the parent
// later, which answers in the chat after the person said stop. The
// stopped child announces nothing and its record is finished.
func TestStopStopsChildren(t *testing.T) {
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

	child := spawnedChild(t, h, parent, "5d1c7a3e-2b7f-4f0e-8a51-0c9e6f4b2d10")
	block := make(chan struct{})
	defer close(block)
	m.mu.Lock()
	m.block = block // the child's model call waits until the test ends
	m.mu.Unlock()
	if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
		Message: sessions.UserText("the job", time.Now())}); err != nil {
		t.Fatal(err)
	}
	<-m.started // the child is working
	h.handle(in("tg", "98", "/stop"))
	h.drained()
	for _, msg := range h.history(parent.String()) {
		if strings.Contains(msg.Text(), "[subagent result]") {
			t.Errorf("a child stopped by /stop in its parent announced: %q", msg.Text())
		}
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (hello, the child's one call)", n)
	}
}

// spawnedChild makes the session of subagent uuid of agent main, spawned
// by parent (as sessions_spawn records it), and returns its key.
func spawnedChild(t *testing.T, h *harness, parent routing.Key, uuid string) routing.Key {
	t.Helper()
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	child, err := routing.SubagentKey("main", uuid)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Begin(h.ctx, child, sessions.Origin{ParentKey: parent.String(), Title: "job", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Patch(h.ctx, child, func(e *sessions.Entry) error { e.SpawnedBy = parent.String(); return nil }); err != nil {
		t.Fatal(err)
	}
	return child
}

// workingChild spawns subagent uuid of parent and dispatches its job,
// whose model call waits until unblock; it returns once the child is
// working.
func workingChild(t *testing.T, h *harness, m *model, parent routing.Key, uuid string) (child routing.Key, unblock func()) {
	t.Helper()
	child = spawnedChild(t, h, parent, uuid)
	block := make(chan struct{})
	var once sync.Once
	unblock = func() { once.Do(func() { close(block) }) }
	m.mu.Lock()
	m.block = block // the child's model call waits for the test
	m.mu.Unlock()
	if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
		Message: sessions.UserText("the job", time.Now())}); err != nil {
		unblock()
		t.Fatal(err)
	}
	<-m.started // the child is working
	return child, unblock
}

// TestNewStopsChildren: /new (and /reset) stops the subagents the ended
// session started: their result belonged to the conversation just ended
// and would otherwise arrive into the new session, unasked, and be
// answered there.
func TestNewStopsChildren(t *testing.T) {
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

	_, unblock := workingChild(t, h, m, parent, "7e2d4b1a-3c9f-4a6e-9b20-1f8d5c3a7e40")
	defer unblock()
	h.handle(in("tg", "98", "/new"))
	for deadline := time.Now().Add(10 * time.Second); !slices.ContainsFunc(h.tg.texts(), func(s string) bool {
		return strings.HasPrefix(s, "Started a new session.")
	}); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to /new: sent %q", h.tg.texts())
		}
	}
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	unblock() // a child still running would finish now and announce
	h.drained()
	for _, msg := range h.history(parent.String()) {
		if strings.Contains(msg.Text(), "[subagent result]") {
			t.Errorf("a child of the session /new ended announced into the new one: %q", msg.Text())
		}
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (hello, the child's one call)", n)
	}
	if got := h.tg.texts(); !slices.Contains(got, "Started a new session. 1 subagent(s) of the previous session stopped.") {
		t.Errorf("sent %q, want the /new reply saying the child was stopped", got)
	}
}
