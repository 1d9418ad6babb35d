package dispatch

import (
	"context"
	"fmt"
	"slices"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// TurnOf reports what durable state holds of the turn that took in, an
// inbound message accepted earlier (the web chat's resume, issue 22): its
// reply from the session's transcript, else whether the journal still has
// it pending. It reads only durable state, so it answers the same after a
// restart; in must carry the Agent, Address and MessageID it was accepted
// with. The transcript is read first: a reply is appended there before it
// is stored in the outbox and sent, so once it is answered, TurnOf says so.
func (d *Dispatcher) TurnOf(ctx context.Context, in channels.Inbound) (channels.TurnState, error) {
	id := RecordID(in)
	route, err := d.Route(in)
	if err != nil {
		return channels.TurnState{}, fmt.Errorf("dispatch: turn of %s: %w", in.MessageID, err)
	}
	store, err := d.opts.Sessions.Store(route.AgentID)
	if err != nil {
		return channels.TurnState{}, fmt.Errorf("dispatch: turn of %s: %w", in.MessageID, err)
	}
	e, ok, err := store.Get(route.Key)
	if err != nil {
		return channels.TurnState{}, fmt.Errorf("dispatch: turn of %s: session: %w", in.MessageID, err)
	}
	consumed := false
	if ok && e.SessionID != "" {
		tr, err := store.TranscriptOf(e)
		if err != nil {
			return channels.TurnState{}, fmt.Errorf("dispatch: turn of %s: transcript: %w", in.MessageID, err)
		}
		rs, err := tr.Records(ctx, []string{id})
		if err != nil {
			return channels.TurnState{}, fmt.Errorf("dispatch: turn of %s: transcript: %w", in.MessageID, err)
		}
		st := channels.TurnState{SessionID: e.SessionID, TokenEstimate: e.ContextTokens}
		consumed = rs.Consumed[id]
		switch {
		case consumed && rs.Answered:
			st.Status, st.Text = channels.TurnAnswered, rs.Answer
			return st, nil
		case consumed && rs.Superseded:
			st.Status, st.Text = channels.TurnEnded, "This message was answered together with a later one."
			return st, nil
		}
	}
	pending, err := d.journal.Pending()
	if err != nil {
		return channels.TurnState{}, fmt.Errorf("dispatch: turn of %s: journal: %w", in.MessageID, err)
	}
	if slices.ContainsFunc(pending, func(r sessions.Record) bool { return r.ID == id }) {
		return channels.TurnState{Status: channels.TurnPending}, nil
	}
	if consumed {
		// Taken into the transcript, no reply after it, no longer
		// pending: the turn failed and its failure was announced.
		return channels.TurnState{Status: channels.TurnEnded, SessionID: e.SessionID, TokenEstimate: e.ContextTokens,
			Text: "This message got no reply: its turn failed (the failure was reported when it happened)."}, nil
	}
	return channels.TurnState{}, nil
}
