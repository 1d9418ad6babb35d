package dispatch

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/sessions"
)

// recover handles the replayed messages of ws (journaled before a restart)
// from what the session's transcript holds of them (SPEC §3.7): one whose
// turn finished gets that turn's reply, never a second one; one already
// appended is not appended again; one the session moved past finishes.
// Replayed messages may span several turns (a process that died after a
// turn's reply was appended, and again in the next turn): each earlier
// turn is settled with its own outcome, oldest first, then the latest. It
// returns the work still to run, in ws's order.
func (f *failures) recover(ctx context.Context, store sessions.AgentStore, ws []*work, log *zap.Logger) []*work {
	d := f.d
	var ids []string
	for _, w := range ws {
		if w.Replayed && w.RecordID != "" {
			ids = append(ids, w.RecordID)
		}
	}
	if len(ids) == 0 {
		return ws
	}
	e, ok, err := store.Get(ws[0].Key)
	if err != nil || !ok || e.SessionID == "" {
		return ws
	}
	tr, err := store.TranscriptOf(e)
	if err != nil {
		return ws
	}
	rs, err := tr.Records(ctx, ids)
	switch {
	case err != nil && ctx.Err() != nil:
		// Cancelled (interrupt, /stop) before recovery could look: what the
		// transcript holds is unknown, so nothing is appended or run.
		log.Info("recovery cancelled")
		d.finish(recordIDs(ws)...)
		f.release(ctx, ws, "Stopped before an answer was ready.")
		return nil
	case err != nil:
		// Running the turn blind could append the inputs twice: retry later.
		f.failed(ctx, ws, log, fmt.Errorf("recovery: read transcript: %w", err))
		return nil
	}
	// A turn that took room history may have died before cutting it.
	d.history.cut(ws[0].Key, rs.HistorySeq, log)
	if len(rs.Consumed) == 0 {
		return ws
	}
	turnOf := map[string]int{} // record id → its turn in rs.Earlier
	for i, t := range rs.Earlier {
		for _, id := range t.IDs {
			turnOf[id] = i
		}
	}
	earlier := make([][]*work, len(rs.Earlier))
	var latest []*work
	for _, w := range ws {
		if !rs.Consumed[w.RecordID] {
			continue
		}
		if i, ok := turnOf[w.RecordID]; ok {
			earlier[i] = append(earlier[i], w)
		} else {
			latest = append(latest, w)
		}
	}
	settled := map[*work]bool{}
	for i, t := range rs.Earlier {
		f.settleReplayed(ctx, store, e, earlier[i], t, false, settled, log)
	}
	f.settleReplayed(ctx, store, e, latest, sessions.RecordsTurn{Answered: rs.Answered, Answer: rs.Answer,
		EntryID: rs.EntryID, Refused: rs.Refused, Superseded: rs.Superseded}, true, settled, log)
	var rest []*work
	for _, w := range ws {
		if !settled[w] {
			rest = append(rest, w)
		}
	}
	return rest
}

// settleReplayed settles ws, replayed messages one turn of session e took
// (t: how that turn ended), adding those it finished to settled: a
// superseded turn's finish, an answered turn's get its reply from the
// transcript. The others stay to run, marked consumed (their input is in
// the transcript already); in the latest turn a child's finished run is
// marked for reuse (the runner announces its reply to the parent without
// calling the model).
func (f *failures) settleReplayed(ctx context.Context, store sessions.AgentStore, e sessions.Entry, ws []*work,
	t sessions.RecordsTurn, latest bool, settled map[*work]bool, log *zap.Logger) {
	d := f.d
	var answered []*work
	for _, w := range ws {
		switch {
		case t.Answered && w.Agent != nil && w.Agent.Subagent:
			w.Consumed, w.Reuse = true, latest
		case t.Answered || t.Superseded:
			answered = append(answered, w)
			settled[w] = true
		default:
			w.Consumed = true
		}
	}
	if len(answered) == 0 {
		return
	}
	if t.Answered && ambientTurn(answered) {
		// An ambient turn's final text is never sent (ambient.go): the
		// tick ended before the restart, whatever its message tool posted.
		log.Info("replayed ambient batch had finished before the restart; finished", zap.Strings("record_ids", recordIDs(answered)))
		d.finish(recordIDs(answered)...)
		return
	}
	done := recordIDs(answered)
	if t.Superseded {
		log.Info("replayed messages already taken into a later turn; finished", zap.Strings("record_ids", done))
		d.finish(done...)
		f.release(ctx, answered, "This message was answered together with a later one.")
		return
	}
	last := answered[len(answered)-1]
	out, adapter := d.replyTarget(store, last)
	if adapter == nil || (last.Agent != nil && !last.Agent.Deliver) {
		d.finish(done...)
		return
	}
	out.Answers = answers(answered)
	out.Text, out.SessionID = t.Answer, e.SessionID
	if t.Refused && strings.TrimSpace(out.Text) == "" {
		out.Text = agents.RefusalText // what the turn said (agents.Runner)
	}
	log.Info("replayed messages were answered before the restart; delivering the stored reply",
		zap.Strings("record_ids", done), zap.String("entry_id", t.EntryID), zap.Bool("latest_turn", latest))
	d.outbox.deliver(ctx, last.Key, last.AgentID, done, out, t.EntryID)
}
