package dispatch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Resume picks up what a previous run left (SPEC §3.7); call it once at
// start, after Register. Streaming drafts left by a crash are cleared first
// (see stream.go). Replies in the outbox are sent first (only their
// chunks not yet delivered, on their session's lane); then every record
// without an outcome is queued again, except one that failed or was in
// flight at too many process deaths: that is given up with a notice.
func (d *Dispatcher) Resume(ctx context.Context) (int, error) {
	d.clearLeftDrafts(ctx)
	replies, err := d.journal.Replies()
	if err != nil {
		return 0, fmt.Errorf("dispatch: resume: %w", err)
	}
	recs, err := d.journal.Pending()
	if err != nil {
		return 0, fmt.Errorf("dispatch: resume: %w", err)
	}
	n := d.resumeWork(ctx, replies, recs)
	if n > 0 || len(replies) > 0 {
		d.log.Info("resumed journaled work", zap.Int("messages", n), zap.Int("replies", len(replies)))
	}
	if o, ok := d.journal.(sessions.Orphans); ok {
		go d.adoptOrphans(ctx, o)
	}
	return n, nil
}

// resumeWork queues replies (sent first) and records left by a process
// that stopped, as Resume describes; it returns how many records run
// again.
func (d *Dispatcher) resumeWork(ctx context.Context, replies []sessions.Reply, recs []sessions.Record) int {
	for i := range replies {
		rp := replies[i]
		key, err := routing.Parse(rp.SessionKey)
		if err != nil {
			go d.resend(ctx, rp) // a notice outside any session
			continue
		}
		d.enqueue(ctx, &work{Key: key, AgentID: rp.AgentID, Reply: &rp})
	}
	n := 0
	var ws []*work
	started := map[string]bool{}
	for _, rec := range recs {
		w, err := d.workFromRecord(rec)
		if err != nil {
			d.log.Error("journal record unreadable; giving it up", zap.String("record_id", rec.ID), zap.Error(err))
			d.opts.Metrics.GivenUp.WithLabelValues("unreadable").Inc()
			d.finish(rec.ID)
			continue
		}
		switch {
		case rec.Deaths() >= d.opts.MaxDeaths:
			d.giveUp(ctx, w, fmt.Sprintf("the process stopped %d times while it ran", rec.Deaths()))
			continue
		case rec.Failures >= d.opts.MaxFailures:
			d.giveUp(ctx, w, fmt.Sprintf("it failed %d times", rec.Failures))
			continue
		}
		ws = append(ws, w)
		started[rec.ID] = rec.Starts+rec.Attempts > 0
		d.opts.Metrics.Replayed.Inc()
		n++
	}
	for _, w := range regroupReplayed(ws, d.rt.Load().Inbound, started) {
		d.enqueue(ctx, w)
	}
	return n
}

func (d *Dispatcher) workFromRecord(rec sessions.Record) (*work, error) {
	var env envelope
	if err := json.Unmarshal(rec.Payload, &env); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	key, err := routing.Parse(rec.SessionKey)
	if err != nil {
		return nil, err
	}
	w := &work{RecordID: rec.ID, AgentID: rec.AgentID, Key: key, Replayed: true,
		Failures: rec.Failures, AcceptedAt: rec.AcceptedAt}
	switch {
	case env.Inbound != nil:
		w.In, w.HistoryMark = *env.Inbound, env.History
		w.Command, w.Args = parseCommand(w.In.Text, d.rt.Load().Reset)
	case env.Agent != nil:
		w.Agent = env.Agent
	default:
		return nil, fmt.Errorf("empty payload")
	}
	return w, nil
}

// Dispatch is agents.Options.Dispatch: it journals internal work (subagent
// runs, announcements into a parent session) and queues it on its lane, so it
// survives a restart like any inbound message.
func (d *Dispatcher) Dispatch(ctx context.Context, a agents.Dispatch) error {
	aw := &agentWork{AgentID: a.AgentID, Key: a.Key.String(), Subagent: a.Subagent, Message: a.Message, Deliver: a.Deliver}
	payload, err := json.Marshal(envelope{Agent: aw})
	if err != nil {
		return fmt.Errorf("dispatch: encode agent work: %w", err)
	}
	id := "agent:" + uuid.NewString()
	if _, err := d.journal.Accept(ctx, sessions.Record{
		ID: id, AgentID: a.AgentID, SessionKey: aw.Key, Payload: payload, AcceptedAt: d.opts.Now(),
	}); err != nil {
		return fmt.Errorf("dispatch: journal agent work: %w", err)
	}
	d.enqueue(ctx, &work{RecordID: id, AgentID: a.AgentID, Key: a.Key, Agent: aw})
	return nil
}

// Shutdown stops accepting messages and drains in-flight turns until ctx
// ends; queued and interrupted work stays pending in the journal.
func (d *Dispatcher) Shutdown(ctx context.Context) {
	d.closing.Store(true)
	if n := d.hold.close(); n > 0 {
		d.log.Info("held burst messages left for the next start", zap.Int("count", n))
	}
	stop := context.AfterFunc(ctx, d.kill)
	defer stop()
	left := d.queue.Shutdown(ctx)
	if len(left) > 0 {
		d.log.Info("queued messages left for the next start", zap.Int("count", len(left)))
	}
}

// Serialise runs fn on key's lane, after its active run, so operator actions
// (API reset, delete, compact) never race a turn.
func (d *Dispatcher) Serialise(ctx context.Context, key routing.Key, fn func(ctx context.Context) error) error {
	var ferr error
	if err := d.queue.Do(ctx, key.String(), func(ctx context.Context) { ferr = fn(ctx) }); err != nil {
		return fmt.Errorf("dispatch: serialise %s: %w", key, err)
	}
	return ferr
}
