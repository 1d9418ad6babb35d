package dispatch

import (
	"context"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Inputs built before Begin (sessions.InputsAhead, issue 21): a store that
// appends them with Begin's touch (PostgreSQL) saves the turn a round
// trip. Only inputs that do not depend on the session Begin returns are
// built ahead: a DM's or main session's text (no room history, no noted
// events, no attachments, which are stored under the session's id), no
// internal work, no ambient batch, no subagent (the runner runs its turns
// on their own). A session rolled over takes none, nor a created one whose
// turn inherits from a parent session (its inputs start with the parent's
// context): the turn then builds and appends its inputs as before.

// inputsAhead returns the turn's inputs for Begin to append, nil when the
// store does not take them or the turn's inputs depend on the session.
func (t *turn) inputsAhead(ctx context.Context) *sessions.InputsAhead {
	taker, ok := t.store.(sessions.InputsAheadTaker)
	if !ok || !taker.TakesInputsAhead() || t.ambient || t.first.Key.Subagent != "" {
		return nil
	}
	if k := t.first.Key.Kind; k == routing.Group || k == routing.Channel || t.d.history.dmEvents(t.ws) {
		return nil // the room's history taken depends on the session
	}
	for _, w := range t.ws {
		if w.Agent != nil || w.In.Ambient || len(w.In.Attachments) > 0 {
			return nil
		}
	}
	msgs := t.inputs(ctx) // before Begin: no session created, no room history, no media
	if len(msgs) == 0 {
		return nil
	}
	// A new session of a key that inherits nothing takes the same inputs.
	return &sessions.InputsAhead{Msgs: msgs, Created: t.inheritMode() == channels.InheritNone}
}

// turnInputs are the inputs the turn runs on: those Begin appended, or
// built now.
func (t *turn) turnInputs(ctx context.Context) []sessions.Message {
	if _, _, ok := t.pre.Taken(); ok {
		return t.pre.Msgs
	}
	return t.inputs(ctx)
}
