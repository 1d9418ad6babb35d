package dispatch

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// slowBegin is a backend whose Begin, while hold is set, waits for its
// context, as a database's does when the statement is slow.
type slowBegin struct {
	sessions.Backend
	hold    atomic.Bool
	waiting chan struct{}
}

func (b *slowBegin) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.Backend.Store(agentID)
	if err != nil {
		return nil, err
	}
	return slowBeginStore{AgentStore: st, b: b}, nil
}

type slowBeginStore struct {
	sessions.AgentStore
	b *slowBegin
}

func (s slowBeginStore) Begin(ctx context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error) {
	if s.b.hold.CompareAndSwap(true, false) {
		s.b.waiting <- struct{}{}
		<-ctx.Done()
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("begin: %w", ctx.Err())
	}
	return s.AgentStore.Begin(ctx, key, o)
}

// TestBeginCancelledIsNotAFailure: a turn cancelled while its session
// begins (interrupt mode, a newer message) ends as a cancelled turn does
// later: its message is finished, not counted as a failure and run again
// on its own after the backoff.
func TestBeginCancelledIsNotAFailure(t *testing.T) {
	slow := &slowBegin{waiting: make(chan struct{}, 1)}
	m := &model{}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Interrupt, Cap: 20, Drop: lanes.DropSummarize}),
		func(h *harness) { h.wrap = func(b sessions.Backend) sessions.Backend { slow.Backend = b; return slow } })
	h.handle(in("tg", "c1", "first"))
	h.drained()
	slow.hold.Store(true)
	h.handle(in("tg", "c1", "older"))
	<-slow.waiting
	h.handle(in("tg", "c1", "newer"))
	h.drained()
	// A failed turn runs again after failureBackoff[0]: wait past it.
	time.Sleep(failureBackoff[0] + 500*time.Millisecond)
	h.drained()
	var got []string
	for _, r := range m.requests() {
		got = append(got, lastUserTexts(r.Messages)...)
	}
	if fmt.Sprint(got) != "[first newer]" {
		t.Errorf("the model was asked %q, want [first newer] (the interrupted message is finished, not run again)", got)
	}
	if texts := h.tg.texts(); fmt.Sprint(texts) != "[re: first re: newer]" {
		t.Errorf("chat got %q", texts)
	}
}
