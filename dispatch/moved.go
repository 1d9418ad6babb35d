package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// A chat that moved to a new id (issue 25: a Telegram group upgraded to a
// supergroup; channels.EventMoved) keeps its conversation: the session of
// the old chat's key moves to the new chat's key (sessions.Index.RenameKey,
// atomic and idempotent), with the room's kept history, the room's memory
// notes and its scheduled jobs (moveJobs), and the old key is recorded as
// moved (keyMoves), so work journaled or queued under it before the move —
// and a late message still addressed to the old id — runs in the moved
// session. The event may come
// several times (Telegram sends a service message in each chat; an
// adapter replays what it knows at start); each step is a no-op when done.
//
// The new key belongs to the agent the old chat was routed to: a binding
// that names the old chat by its id would otherwise send the moved
// session's chat to another agent. Configuration keys that still name the
// old id (bindings, access lists, room rules; Runtime.ConfigNames) are not
// rewritten: the operator is told, in a warning, which to update.

// moved handles in, an EventMoved. Its error is nil once the move is
// durable (or cannot be made: it is logged), else the event is redelivered.
func (d *Dispatcher) moved(ctx context.Context, rt *Runtime, in channels.Inbound) error {
	oldIn, newIn := in, in
	oldIn.Event, newIn.Event = nil, nil
	newIn.ChatID = in.Event.ChatID
	log := d.log.With(zap.String("channel", in.Channel), zap.String("account_id", in.AccountID),
		zap.String("chat_id", in.ChatID), zap.String("new_chat_id", newIn.ChatID))
	if newIn.ChatID == "" || newIn.ChatID == in.ChatID {
		log.Warn("chat move without a new chat id ignored")
		return channels.ErrRejected
	}
	if rt.ConfigNames != nil {
		if keys := rt.ConfigNames(in.Channel, in.AccountID, in.ChatID); len(keys) > 0 {
			log.Warn("a group moved to a new chat id (upgraded to a supergroup); the configuration still names the old id: "+
				"update these keys to the new chat id (until then its messages may be refused or routed elsewhere)",
				zap.Strings("config_keys", keys))
		}
	}
	from, err := rt.Route(oldIn)
	if err != nil {
		log.Warn("chat move: old chat not routable", zap.Error(err))
		return channels.ErrRejected
	}
	to, err := rt.Route(newIn)
	if err != nil {
		log.Warn("chat move: new chat not routable", zap.Error(err))
		return channels.ErrRejected
	}
	fk, tk := from.Key.Canonical(), to.Key.Canonical()
	if tk.Agent != fk.Agent {
		log.Warn("chat move: the new chat id routes to another agent; the session stays with the old chat's agent",
			zap.String("agent_id", fk.Agent), zap.String("new_agent_id", tk.Agent))
		tk.Agent = fk.Agent
		if tk, err = routing.Parse(tk.String()); err != nil {
			log.Warn("chat move: new key", zap.Error(err))
			return channels.ErrRejected
		}
	}
	if fk == tk { // one key for both (dmScope global): no session to move; its jobs' chat moves
		return d.moveJobs(ctx, oldIn, newIn, "", "", log)
	}
	log = log.With(zap.Stringer("session_key", fk), zap.Stringer("new_session_key", tk))
	moved, err := d.moveSession(ctx, fk, tk, log)
	if err != nil {
		return err
	}
	if !moved { // the new chat's own session stays; the old one keeps its key
		fk, tk = routing.Key{}, routing.Key{}
	}
	if err := d.moveJobs(ctx, oldIn, newIn, fk.String(), tk.String(), log); err != nil {
		return err
	}
	if !moved {
		return nil
	}
	d.moveRoom(ctx, rt, oldIn, newIn, fk, tk, log)
	d.queues.forget(fk)
	d.queues.forget(tk)
	d.activations.forget(fk)
	d.activations.forget(tk)
	return nil
}

// moveSession moves the session of from to to and records the move; moved
// is false when the new chat had a session of its own (the old one stays).
func (d *Dispatcher) moveSession(ctx context.Context, from, to routing.Key, log *zap.Logger) (moved bool, err error) {
	store, err := d.opts.Sessions.Store(from.Agent)
	if err != nil {
		return false, fmt.Errorf("dispatch: chat move: %w", err)
	}
	e, err := store.RenameKey(ctx, from, to)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		log.Info("chat moved; it had no session yet")
	case errors.Is(err, sessions.ErrKeyTaken):
		// The new chat spoke first: its session stays, and the old one
		// stays under the old key (gateway sessions list shows both).
		log.Error("chat moved, but the new chat already has a session of its own: the old chat's session was not moved", zap.Error(err))
		return false, nil
	case err != nil && isStorage(err):
		d.opts.Metrics.StorageErrors.Inc()
		return false, fmt.Errorf("dispatch: chat move: %w: %w", channels.ErrUnavailable, err)
	case err != nil:
		return false, fmt.Errorf("dispatch: chat move: %w", err)
	default:
		log.Info("chat moved; its session follows", zap.String("session_id", e.SessionID))
	}
	// Recorded once the session is where it says: work of the old key
	// that runs after this finds it.
	if err := d.moves.record(ctx, from, to); err != nil {
		return false, fmt.Errorf("dispatch: chat move: %w", err)
	}
	d.spawns.moved(from, to) // /stop in the new chat finds them
	return true, nil
}

// moveJobs re-targets the old chat's scheduled jobs to the new chat id
// (sessions.Jobs.MoveJobs), and those of session key from to to (""
// moves no key): /remind list and cancel in the new chat find them, and
// their occurrences arrive there. Idempotent, as the move is.
func (d *Dispatcher) moveJobs(ctx context.Context, oldIn, newIn channels.Inbound, from, to string, log *zap.Logger) error {
	n, err := d.opts.Sessions.Jobs().MoveJobs(ctx, oldIn.ChatKey(), newIn.ChatID, from, to)
	switch {
	case err != nil && isStorage(err):
		d.opts.Metrics.StorageErrors.Inc()
		return fmt.Errorf("dispatch: chat move: jobs: %w: %w", channels.ErrUnavailable, err)
	case err != nil:
		return fmt.Errorf("dispatch: chat move: jobs: %w", err)
	case n > 0:
		log.Info("chat moved; its scheduled jobs follow", zap.Int("jobs", n))
	}
	return nil
}

// moveRoom moves what the room kept under the old chat: its unaddressed
// history (a redelivered move appends nothing twice: entries are kept by
// message id) and its memory notes. Failures are logged: the session, the
// conversation itself, has moved.
func (d *Dispatcher) moveRoom(ctx context.Context, rt *Runtime, oldIn, newIn channels.Inbound, from, to routing.Key, log *zap.Logger) {
	hist := d.opts.Sessions.History()
	if hist.Len(from.String()) > 0 {
		lim := historyLimits(rt.RoomFor(newIn))
		if lim.Count <= 0 {
			lim.Count = channels.MaxHistoryLimit
		}
		es, err := hist.Take(from.String(), hist.Seq(), lim)
		for _, e := range es {
			if err != nil {
				break
			}
			_, err = hist.Append(ctx, to.String(), sessions.HistoryEntry{MessageID: e.MessageID, SenderID: e.SenderID,
				SenderName: e.SenderName, At: e.At, Text: e.Text}, lim)
		}
		if err == nil {
			err = hist.Clear(from.String())
		}
		if err != nil {
			log.Warn("chat move: room history not moved", zap.Error(err))
		}
	}
	mem := d.opts.Sessions.Memory()
	if mem == nil {
		return
	}
	oldScope := sessions.RoomScope(from.Agent, oldIn.Channel, oldIn.ChatID)
	newScope := sessions.RoomScope(from.Agent, newIn.Channel, newIn.ChatID)
	notes, err := mem.Notes(ctx, oldScope)
	if err != nil || len(notes) == 0 {
		if err != nil {
			log.Warn("chat move: room notes not moved", zap.Error(err))
		}
		return
	}
	have, err := mem.Notes(ctx, newScope)
	if err != nil {
		log.Warn("chat move: room notes not moved", zap.Error(err))
		return
	}
	lim := sessions.MemoryLimits{MaxNotes: sessions.MaxMemoryNotes, MaxNoteBytes: sessions.MaxMemoryNoteBytes}
	for _, n := range notes {
		if slices.ContainsFunc(have, func(h sessions.MemoryNote) bool { return h.Text == n.Text }) {
			continue // moved by an earlier delivery of this move
		}
		if _, err := mem.AddNote(ctx, newScope, n.Text, n.UpdatedAt, lim); err != nil {
			log.Warn("chat move: room note not moved", zap.Error(err))
			return
		}
	}
	if _, err := mem.ForgetScope(ctx, oldScope); err != nil {
		log.Warn("chat move: old room notes not removed", zap.Error(err))
	}
}

// keyMoves are the session keys whose session moved (moved.go), kept in
// the backend's cursors (sessions.KeyMovesScope) and read once into
// memory. Another replica's moves are seen after its next start (and
// through the move's own event, which any replica handles).
type keyMoves struct {
	d *Dispatcher

	mu     sync.Mutex
	loaded bool              // guarded by mu
	to     sessions.KeyMoves // guarded by mu
}

// resolve returns the key k's session is under now: k, or where it moved.
func (m *keyMoves) resolve(k routing.Key) routing.Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loadLocked()
	return m.to.Resolve(k)
}

// loadLocked reads the stored moves once; a failure is logged and tried
// again at the next resolve.
func (m *keyMoves) loadLocked() {
	if m.loaded {
		return
	}
	if m.to == nil {
		m.to = sessions.KeyMoves{}
	}
	all, bad, err := sessions.ReadKeyMoves(m.d.life, m.d.opts.Sessions.Cursors())
	if err != nil {
		m.d.log.Warn("moved session keys not read", zap.Error(err))
		return
	}
	for _, from := range bad {
		m.d.log.Warn("moved session key not understood", zap.String("session_key", from))
	}
	for f, t := range all {
		m.to[f] = t
	}
	m.loaded = true
}

// record notes that from's session moved to to, durably.
func (m *keyMoves) record(ctx context.Context, from, to routing.Key) error {
	m.mu.Lock()
	done := m.to[from] == to
	m.mu.Unlock()
	if !done {
		if err := m.d.opts.Sessions.Cursors().SetCursor(ctx, sessions.KeyMovesScope, from.String(), to.String()); err != nil {
			return fmt.Errorf("record moved key: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.to == nil {
		m.to = sessions.KeyMoves{}
	}
	m.to[from] = to
	return nil
}
