package dispatch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// childDoneFails is a backend whose journal fails the first Done of a
// subagent's record: the process died after the child's run had announced
// its result (the announcement is journaled) and before the child's own
// record was finished.
type childDoneFails struct {
	sessions.Backend
	mu     sync.Mutex
	child  map[string]bool // record ids of subagent work
	failed bool
}

func (b *childDoneFails) Journal() sessions.Delivery {
	return childDoneJournal{Delivery: b.Backend.Journal(), b: b}
}

type childDoneJournal struct {
	sessions.Delivery
	b *childDoneFails
}

func (j childDoneJournal) Accept(ctx context.Context, rec sessions.Record) (bool, error) {
	if strings.Contains(rec.SessionKey, ":subagent:") {
		j.b.mu.Lock()
		j.b.child[rec.ID] = true
		j.b.mu.Unlock()
	}
	return j.Delivery.Accept(ctx, rec)
}

func (j childDoneJournal) Done(ids ...string) error {
	j.b.mu.Lock()
	fail := false
	for _, id := range ids {
		fail = fail || (j.b.child[id] && !j.b.failed)
	}
	if fail {
		j.b.failed = true
	}
	j.b.mu.Unlock()
	if fail {
		return errors.New("process died")
	}
	return j.Delivery.Done(ids...)
}

// TestAnnouncementOnceAcrossRestart (SPEC §5, §3.7): a child whose run
// announced its result into the parent, but whose own record was still
// pending when the process died, is replayed at the next start (its
// reply reused from the transcript) and announces again: the parent must
// hear the result once, not answer it twice.
func TestAnnouncementOnceAcrossRestart(t *testing.T) {
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

	child := spawnedChild(t, h, parent, "0b0e4c1e-6f8e-4c55-9d3a-2f8f1b0c7a11")
	if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
		Message: sessions.UserText("the job", time.Now())}); err != nil {
		t.Fatal(err)
	}
	announced := func() int {
		n := 0
		for _, m := range h.history(parent.String()) {
			if m.Role == sessions.RoleUser && strings.Contains(m.Text(), "[subagent result]") {
				n++
			}
		}
		return n
	}
	eventually(t, "the announcement", func() bool { return announced() == 1 && len(h.tg.sent()) == 2 })
	h.restart()
	if n, err := h.d.Resume(h.ctx); err != nil || n != 1 {
		t.Fatalf("resume: %d, %v; want the child's record", n, err)
	}
	h.drained()
	if n := announced(); n != 1 {
		t.Errorf("the parent heard the child's result %d times, want once", n)
	}
}
