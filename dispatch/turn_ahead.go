package dispatch

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// The reply stored ahead (issue 21): a turn's reply is handed to the
// transcript append of its final answer (sessions.ReplyAhead), so that a
// backend that can (PostgreSQL) stores its outbox record, and the turn's
// usage row, in that append's transaction: one commit a message fewer.
// settle then sends the stored reply without a Ready of its own; with a
// backend that ignores it (files, SQLite) nothing changes. The reply is
// what settle and deliver would store: the same records, text, chunks and
// target, built before the append instead of after it.

// aheadReply is the reply a turn handed to its answer's append.
type aheadReply struct {
	ra    *sessions.ReplyAhead
	out   channels.Outbound // the reply as sent, its text included
	a     channels.Adapter
	usage bool // the backend stores the usage row with the reply
}

// taken returns the reply the append stored, if it did. Safe on nil.
func (h *aheadReply) taken() (sessions.Reply, bool) {
	if h == nil {
		return sessions.Reply{}, false
	}
	return h.ra.Taken()
}

// usageTaken reports whether the usage row was stored with the reply.
func (h *aheadReply) usageTaken() bool {
	_, ok := h.taken()
	return ok && h.usage
}

// replyAhead is agents.Turn.ReplyAhead for t, nil where the reply is not
// one settle stores as given: an ambient turn (never sent), a reply not
// delivered, a streamed partial draft the reply takes over (its draft is
// known only once the run ended: stream.handOver).
func (t *turn) replyAhead(stream *draftStream) func(agents.Result) *sessions.ReplyAhead {
	if t.ambient || t.adapter == nil || (stream != nil && stream.mode == channels.StreamPartial) {
		return nil
	}
	if tk, ok := t.d.journal.(sessions.ReplyAheadTaker); !ok || !tk.TakesReplyAhead() {
		return nil // files, SQLite: deliver builds the reply once, after the run
	}
	return func(res agents.Result) *sessions.ReplyAhead {
		d := t.d
		// settle's reply: every message the run answered (steered ones
		// too: none is taken after the final model call).
		all := slices.Concat(t.ws, t.steered.all())
		out := t.out
		out.Answers = answers(all)
		out.SessionID, out.TokenEstimate = res.SessionID, res.TokenEstimate
		out.Text, out.Media = res.Text, outMedia(res.Media)
		if strings.TrimSpace(out.Text) == "" && len(out.Media) == 0 && !isStreamer(t.adapter) {
			return nil // finished without a reply
		}
		a := d.adapter(out.Channel, out.AccountID)
		base, ok, err := d.outbox.reply(a, t.first.Key, t.first.AgentID, recordIDs(all), out, "")
		if err != nil || !ok {
			return nil // deliver says why, after the run
		}
		_, usage := d.opts.Sessions.Usage().(laterRecorder)
		last := t.last
		ra := &sessions.ReplyAhead{Journal: d.journal, Build: func(entryID string) (sessions.Reply, []sessions.UsageRow) {
			rp := base
			rp.ID, rp.EntryID, rp.CreatedAt = uuid.NewString(), entryID, d.opts.Now()
			var rows []sessions.UsageRow
			if usage {
				r := res
				r.EntryID = entryID
				if row, ok := usageRow(last, r); ok {
					rows = append(rows, row)
				}
			}
			return rp, rows
		}}
		t.ahead = &aheadReply{ra: ra, out: out, a: a, usage: usage}
		return ra
	}
}

// sendAhead sends the reply the answer's append stored, if it did, and
// reports whether it did: the reply answers the records already, as
// deliver's Ready would have made it, so it is sent as deliver sends it
// (whatever the run's context says since: a stored reply is delivered,
// and sendReply checks the session's lease before each chunk).
func (t *turn) sendAhead(ctx context.Context) bool {
	rp, ok := t.ahead.taken()
	if !ok {
		return false
	}
	t.d.fails.streaks.end(t.first.Key)
	t.out = t.ahead.out
	lane := t.first.Key.Canonical()
	t.d.outbox.sendReply(ctx, t.ahead.a, rp, t.out, &lane)
	return true
}
