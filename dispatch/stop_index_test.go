package dispatch

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"context"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// listCounting is a backend counting the index entries its stores hand
// out by listing them (List, Recent).
type listCounting struct {
	sessions.Backend
	listed atomic.Int64
}

func (b *listCounting) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.Backend.Store(agentID)
	if err != nil {
		return nil, err
	}
	return listCountingStore{AgentStore: st, b: b}, nil
}

type listCountingStore struct {
	sessions.AgentStore
	b *listCounting
}

func (s listCountingStore) List() ([]sessions.Entry, error) {
	list, err := s.AgentStore.List()
	s.b.listed.Add(int64(len(list)))
	return list, err
}

func (s listCountingStore) Recent(n int) ([]sessions.Entry, error) {
	list, err := s.AgentStore.Recent(n)
	s.b.listed.Add(int64(len(list)))
	return list, err
}

// TestStopReadsNoUnrelatedSessions (SPEC §4 /stop): /stop, /new and
// /delete find the subagents their session started without reading the
// other sessions: each read every session of every agent to find the
// children by their spawnedBy, so at 100,000 sessions every /stop in
// any chat read all 100,000 entries. The children are still stopped.
func TestStopReadsNoUnrelatedSessions(t *testing.T) {
	const unrelated = 300
	for _, command := range []string{"/stop", "/new", "/delete"} {
		t.Run(strings.TrimPrefix(command, "/"), func(t *testing.T) {
			m := &model{started: make(chan struct{}, 10)}
			b := &listCounting{}
			h := newHarness(t, "", m, func(h *harness) {
				h.wrap = func(inner sessions.Backend) sessions.Backend { b.Backend = inner; return b }
				h.agent = func(o *agents.Options) {
					o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
				}
			})
			st, err := h.mgr.Store("main")
			if err != nil {
				t.Fatal(err)
			}
			for i := range unrelated {
				k := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: fmt.Sprintf("other-%d", i)}
				if _, _, err := st.Begin(h.ctx, k, sessions.Origin{At: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "43"}
			h.handle(in("tg", "43", "hello"))
			<-m.started
			h.drained()
			_, unblock := workingChild(t, h, m, parent, "8c2a6e4d-1f3b-4c9a-b7e5-0d9f3a2c6e10")
			defer unblock()

			b.listed.Store(0)
			h.handle(in("tg", "43", command))
			eventually(t, "the answer to "+command, func() bool {
				return slices.ContainsFunc(h.tg.texts(), func(s string) bool { return strings.Contains(s, "1 subagent(s)") })
			})
			if n := b.listed.Load(); n > 10 {
				t.Errorf("%s read %d index entries among %d unrelated sessions, want none of them", command, n, unrelated)
			}
			m.mu.Lock()
			m.block = nil
			m.mu.Unlock()
			unblock()
			h.drained()
			if n := len(m.requests()); n != 2 {
				t.Errorf("the model was asked %d times, want 2 (hello, the stopped child's one call)", n)
			}
		})
	}
}

// TestStopInMovedGroupStopsChildren (SPEC §4 /stop): a group that moved
// to a new chat id (upgraded to a supergroup) while its session's child
// worked: /stop in the moved chat stops that child. The child was found
// by the key its parent had when it spawned, the old chat's, and ran on;
// its result followed the move and was answered after the stop.
func TestStopInMovedGroupStopsChildren(t *testing.T) {
	m := &model{started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, func(h *harness) {
		h.agent = func(o *agents.Options) {
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
		}
	})
	const oldChat, newChat = "-200", "-2001"
	oldKey := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Group, Peer: oldChat}
	h.handle(groupIn(oldChat, "hello"))
	<-m.started
	h.drained()
	_, unblock := workingChild(t, h, m, oldKey, "5e9b3d7f-2a4c-4e1b-8f60-3c7a1d5e9b20")
	defer unblock()
	h.handle(movedIn(oldChat, newChat))
	h.handle(groupIn(newChat, "/stop"))
	eventually(t, "the answer to /stop", func() bool {
		return slices.ContainsFunc(h.tg.texts(), func(s string) bool { return strings.HasPrefix(s, "Stopped.") })
	})
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	unblock() // a child still running finishes now and announces
	h.drained()
	if got := h.tg.texts(); !slices.Contains(got, "Stopped. 0 queued message(s) dropped. 1 subagent(s) stopped.") {
		t.Errorf("chat got %q, want /stop to stop the moved session's child", got)
	}
	for _, r := range m.requests() {
		for _, msg := range r.Messages {
			if strings.Contains(msg.Text(), "[subagent result]") {
				t.Fatalf("a child /stop should have stopped announced: %q", msg.Text())
			}
		}
	}
}
