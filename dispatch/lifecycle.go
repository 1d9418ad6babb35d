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
// start, after Register. See recovery.resume.
func (d *Dispatcher) Resume(ctx context.Context) (int, error) { return d.recovery.resume(ctx) }

// Dispatch is agents.Options.Dispatch: it journals internal work (subagent
// runs, announcements into a parent session) and queues it on its lane, so it
// survives a restart like any inbound message. Work with an ID is journaled
// under it and queued once: a repeat is dropped (a child's announcement
// made again by its run replayed after a crash).
func (d *Dispatcher) Dispatch(ctx context.Context, a agents.Dispatch) error {
	id := "agent:" + uuid.NewString()
	if a.ID != "" {
		id = "agent:" + a.ID
	}
	aw := &agentWork{AgentID: a.AgentID, Key: a.Key.String(), Subagent: a.Subagent, Message: a.Message, Deliver: a.Deliver}
	// A child's task or result is queued under the gate /stop takes
	// (spawns.go): one its session's /stop came before, or came while it
	// was journaled, is not queued.
	f, gated := d.familyOf(a, id)
	if gated && !f.child.IsZero() {
		aw.Parent = f.parent.String()
	}
	payload, err := json.Marshal(envelope{Agent: aw})
	if err != nil {
		return fmt.Errorf("dispatch: encode agent work: %w", err)
	}
	if gated {
		if err := d.spawns.begin(ctx, id, f); err != nil {
			return fmt.Errorf("dispatch: queue agent work for %s: %w", aw.Key, err)
		}
	}
	dup, err := d.journal.Accept(ctx, sessions.Record{
		ID: id, AgentID: a.AgentID, SessionKey: aw.Key, Payload: payload, AcceptedAt: d.opts.Now(),
	})
	if err != nil || dup {
		if gated {
			d.spawns.abandon(id)
		}
		if err != nil {
			return fmt.Errorf("dispatch: journal agent work: %w", err)
		}
		d.log.Info("agent work already journaled; not queued again", zap.String("record_id", id), zap.String("session_key", aw.Key))
		return nil
	}
	w := &work{RecordID: id, AgentID: a.AgentID, Key: a.Key, Agent: aw}
	if !gated {
		d.enqueue(ctx, w)
		return nil
	}
	if !d.spawns.settle(id, func() { d.enqueue(ctx, w) }) {
		d.finish(id)
		d.log.Info("agent work not queued: its session was stopped meanwhile", zap.String("record_id", id), zap.String("session_key", aw.Key))
		return fmt.Errorf("dispatch: queue agent work for %s: %w", aw.Key, errStopped)
	}
	return nil
}

// Shutdown stops accepting messages and drains in-flight turns until ctx
// ends; queued and interrupted work stays pending in the journal. It
// returns once every goroutine the dispatcher started has ended: first
// its delayed retries (later: those not fired are stopped, their records
// stay pending), then recovery's (orphan adoption, unsure-write
// resolvers: stopped at once),
// then the lanes' runs (drained within the grace period), then the
// outbox's resends (cut short once the lanes are done: their replies stay
// in the outbox for the next start).
func (d *Dispatcher) Shutdown(ctx context.Context) {
	d.closing.Store(true)
	d.outbox.endParking() // a parked reply's wait holds its lane: the lanes' shutdown waits for it
	if n := d.hold.close(); n > 0 {
		d.log.Info("held burst messages left for the next start", zap.Int("count", n))
	}
	if n := d.ambient.close(); n > 0 {
		d.log.Info("held ambient batches left for the next start", zap.Int("count", n))
	}
	stop := context.AfterFunc(ctx, d.kill)
	defer stop()
	d.later.stop()
	d.recovery.shutdown()
	left := d.queue.Shutdown(ctx)
	if len(left) > 0 {
		d.log.Info("queued messages left for the next start", zap.Int("count", len(left)))
	}
	d.outbox.shutdown()
}

// Ended stops what key's session left behind when an operator reset or
// deleted it (the HTTP API, `gateway sessions reset|delete` through the
// daemon), as /new and /delete do in the chat: the subagents it started,
// whose results would arrive into the next session unasked, and its group
// activation cached here. It returns how many subagents were stopped.
// Call it on key's lane (in Serialise's fn), after the session ended.
func (d *Dispatcher) Ended(ctx context.Context, key routing.Key) int {
	d.activations.forget(key) // a deleted session's activation went with its entry
	n := commander{d}.stopChildren(ctx, key, nil)
	if n > 0 {
		d.log.Info("subagents of an ended session stopped", zap.Stringer("session_key", key), zap.Int("count", n))
	}
	return n
}

// Serialise runs fn on key's lane, after its active run, so operator actions
// (API reset, delete, compact, patch) never race a turn. fn may change the
// session's queue settings (an API patch of queueMode): the messages
// queued behind it and the next one read them from the entry, not from
// the lanes' cache (forgotten before the lane moves on).
func (d *Dispatcher) Serialise(ctx context.Context, key routing.Key, fn func(ctx context.Context) error) error {
	var ferr error
	defer d.queues.forget(key)
	do := func(ctx context.Context) {
		defer d.queues.forget(key.Canonical())
		ferr = fn(ctx)
	}
	if err := d.queue.Do(ctx, key.Canonical(), do); err != nil {
		return fmt.Errorf("dispatch: serialise %s: %w", key, err)
	}
	return ferr
}
