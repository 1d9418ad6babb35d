package sessions

import (
	"context"
	"sync"
)

// InputsAhead is a turn's inputs handed to Index.Begin (WithInputsAhead
// on its context), so that a backend that can (PostgreSQL) appends them
// to the session Begin touches in the touch's own write: one round trip
// instead of two (issue 21). The backend appends them only when Begin
// continues a fresh session (the one it touched last for the key, or one
// created or reset elsewhere), or, with Created, creates the key's first
// session; a session rolled over (a daily or idle reset, /new) takes
// nothing, nor does a created one without Created, and the caller appends
// the inputs itself after Begin, as before, to the session Begin
// returned. Begin's write and the append commit together or not at all.
// A backend that appended them calls Take; the others ignore it.
type InputsAhead struct {
	// Msgs are the inputs, built before Begin: they must not depend on the
	// entry Begin returns.
	Msgs []Message
	// Created says the inputs hold for a session Begin creates as well
	// (a turn that takes nothing from a parent session when its session
	// is new): a backend may then append them with the creation.
	Created bool

	mu    sync.Mutex
	taken bool
	ids   []string
	ctx   *Context
}

// Take records that the inputs were appended with entry ids ids; c, when
// not nil, is the context as that append left it (AppendLazyContext's).
func (a *InputsAhead) Take(ids []string, c *Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.taken, a.ids, a.ctx = true, ids, c
}

// Taken returns the entry ids and the context (nil when not read) of the
// inputs a backend appended with Begin; false when it did not. Safe on nil.
func (a *InputsAhead) Taken() ([]string, *Context, bool) {
	if a == nil {
		return nil, nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ids, a.ctx, a.taken
}

// InputsAheadTaker is an AgentStore whose Begin appends an InputsAhead
// (pgstore's). A caller builds its inputs ahead only for such a store.
type InputsAheadTaker interface {
	TakesInputsAhead() bool
}

type inputsAheadKey struct{}

// WithInputsAhead returns ctx carrying a for the Begin made with it.
func WithInputsAhead(ctx context.Context, a *InputsAhead) context.Context {
	return context.WithValue(ctx, inputsAheadKey{}, a)
}

// InputsAheadFrom returns the InputsAhead ctx carries, nil if none.
func InputsAheadFrom(ctx context.Context) *InputsAhead {
	a, _ := ctx.Value(inputsAheadKey{}).(*InputsAhead)
	return a
}
