package dispatch

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// aheadBackend is a backend whose stores take a turn's inputs with Begin
// (sessions.InputsAhead), as pgstore's: appended to a session Begin did
// not roll over, and to one it created only when the inputs say they hold
// for a created session.
type aheadBackend struct {
	sessions.Backend
	offered, taken atomic.Int32
}

func (b *aheadBackend) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.Backend.Store(agentID)
	if err != nil {
		return nil, err
	}
	return aheadStore{st, b}, nil
}

type aheadStore struct {
	sessions.AgentStore
	b *aheadBackend
}

func (aheadStore) TakesInputsAhead() bool { return true }

func (s aheadStore) Begin(ctx context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error) {
	e, info, err := s.AgentStore.Begin(ctx, key, o)
	in := sessions.InputsAheadFrom(ctx)
	if in != nil {
		s.b.offered.Add(1)
	}
	if err != nil || in == nil || (info.Created && !in.Created) || info.ResetReason != "" {
		return e, info, err
	}
	tr, err := s.AgentStore.TranscriptOf(e)
	if err != nil {
		return e, info, err
	}
	ids, err := tr.AppendLazy(ctx, in.Msgs...)
	if err != nil {
		return e, info, err
	}
	in.Take(ids, nil)
	s.b.taken.Add(1)
	return e, info, nil
}

// TestInputsAppendedWithBeginOnce (issue 21): with a store that appends a
// turn's inputs with Begin, a DM's message to its existing session is
// handed over and is in the transcript once (the runner does not append
// it again), and the model sees it; so is the message that creates the
// session (a DM inherits nothing: its inputs hold for a new session). A
// group's (its room history depends on the session) and one with an
// attachment are not handed over, and are appended by the turn as before.
func TestInputsAppendedWithBeginOnce(t *testing.T) {
	b := &aheadBackend{}
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(s sessions.Backend) sessions.Backend { b.Backend = s; return b }
	})
	first, second := in("tg", "7", "hello"), in("tg", "7", "again")
	h.handle(first)
	h.drained()
	if n := b.taken.Load(); n != 1 {
		t.Fatalf("inputs of the message creating the session taken %d times, want once", n)
	}
	h.handle(second)
	h.drained()
	if n := b.taken.Load(); n != 2 {
		t.Fatalf("inputs taken %d times, want twice (each message once)", n)
	}
	route, _ := h.d.Route(second)
	users := userEntries(h, route.Key.String())
	if len(users) != 2 || users[0].Text() != "hello" || users[1].Text() != "again" {
		t.Fatalf("user entries %+v; want hello, again once each", users)
	}
	if got := h.tg.texts(); len(got) != 2 || got[1] != "re: again" {
		t.Errorf("replies %q", got)
	}
	reqs := h.m.requests()
	if last := lastUserTexts(reqs[len(reqs)-1].Messages); len(last) == 0 || last[len(last)-1] != "again" {
		t.Errorf("the model was sent %q last", last)
	}

	offered := b.offered.Load()
	g := groupMsg("-100", "9", "in the group")
	h.handle(g)
	g2 := groupMsg("-100", "9", "again in the group")
	h.handle(g2)
	withFile := in("tg", "7", "a file")
	withFile.Attachments = []channels.Attachment{{Kind: channels.MediaDocument, FileName: "a.txt", MimeType: "text/plain", Data: []byte("hi")}}
	h.handle(withFile)
	h.drained()
	if n := b.offered.Load(); n != offered {
		t.Errorf("%d turns of a group or with an attachment handed their inputs to Begin; want none", n-offered)
	}
	groupRoute, _ := h.d.Route(g2)
	if users := userEntries(h, groupRoute.Key.String()); len(users) != 2 {
		t.Errorf("group user entries %+v; want 2", users)
	}
}
