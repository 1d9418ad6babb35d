package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// The subagents of each session (SPEC §4 /stop, §5): which children have
// work in this process, by the session that spawned them, so that /stop,
// /new, /delete and the API's reset find a session's children without
// reading every session of every agent; and the gate that orders a
// child's queueing (its spawn) and the queueing of a child's result (its
// announcement) with those stops, so that one being journaled while a stop
// runs is stopped as well, not queued just after it.

// errStopped refuses subagent work whose session was stopped while it was
// being queued.
var errStopped = errors.New("the session was stopped")

// spawns indexes the subagents with work in this process by their parent.
type spawns struct {
	// gate is held by a stop from the moment it cancels its session's run
	// until it has marked and cancelled that session's subagent work, and
	// by Dispatch from the check that its work was not stopped until the
	// work is on its lane. Taken before mu and the lanes' locks.
	gate    sync.Mutex
	pending map[string]*pendingWork // by record id: work being journaled; under gate

	mu sync.Mutex // guards kids and kin (finish looks every record up)
	// kids are the children with unfinished work by their parent: child
	// key → its record id.
	kids map[routing.Key]map[routing.Key]string
	kin  map[string]family // child record id → its family
}

// family is a child and the session that spawned it.
type family struct{ parent, child routing.Key }

// pendingWork is subagent work being journaled: a child's task (child
// set) or a child's result announced into parent (child zero).
type pendingWork struct {
	family
	stopped bool // parent was stopped meanwhile: it is not queued
}

// begin records that work id of f is being journaled, unless ctx (the
// run that queues it: the parent's for a spawn, the child's for an
// announcement) was cancelled already: a stop came first.
func (s *spawns) begin(ctx context.Context, id string, f family) error {
	s.gate.Lock()
	defer s.gate.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", errStopped, err)
	}
	if s.pending == nil {
		s.pending = map[string]*pendingWork{}
	}
	s.pending[id] = &pendingWork{family: f}
	return nil
}

// abandon forgets work id that was not journaled (or was already).
func (s *spawns) abandon(id string) {
	s.gate.Lock()
	defer s.gate.Unlock()
	delete(s.pending, id)
}

// settle queues work id (enqueue) unless its parent was stopped since
// begin; it reports whether it did.
func (s *spawns) settle(id string, enqueue func()) bool {
	s.gate.Lock()
	defer s.gate.Unlock()
	p := s.pending[id]
	delete(s.pending, id)
	if p != nil && p.stopped {
		return false
	}
	enqueue()
	return true
}

// add records child's unfinished work id, spawned by parent.
func (s *spawns) add(f family, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kids == nil {
		s.kids, s.kin = map[routing.Key]map[routing.Key]string{}, map[string]family{}
	}
	if s.kids[f.parent] == nil {
		s.kids[f.parent] = map[routing.Key]string{}
	}
	s.kids[f.parent][f.child] = id
	s.kin[id] = f
}

// done forgets the children whose work ids finished.
func (s *spawns) done(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		f, ok := s.kin[id]
		if !ok {
			continue
		}
		delete(s.kin, id)
		if kids := s.kids[f.parent]; kids[f.child] == id {
			delete(kids, f.child)
			if len(kids) == 0 {
				delete(s.kids, f.parent)
			}
		}
	}
}

// moved files the children of from, and its work being journaled, under
// to: its chat moved (moved.go), and /stop comes from the new chat.
func (s *spawns) moved(from, to routing.Key) {
	s.gate.Lock()
	defer s.gate.Unlock()
	for _, p := range s.pending {
		if p.parent == from {
			p.parent = to
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for child, id := range s.kids[from] {
		if s.kids[to] == nil {
			s.kids[to] = map[routing.Key]string{}
		}
		s.kids[to][child] = id
		s.kin[id] = family{parent: to, child: child}
	}
	delete(s.kids, from)
}

// stopLocked stops parent's subagent work, the caller holding gate: the
// spawns and announcements being journaled are marked not to be queued,
// and the children with work are taken out of the index and returned
// (child key → record id). spawning is how many children were being
// queued.
func (s *spawns) stopLocked(parent routing.Key) (kids map[routing.Key]string, spawning int) {
	for _, p := range s.pending {
		if p.parent == parent && !p.stopped {
			p.stopped = true
			if !p.child.IsZero() {
				spawning++
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kids = s.kids[parent]
	delete(s.kids, parent)
	for _, id := range kids {
		delete(s.kin, id)
	}
	return kids, spawning
}

// stopChildren stops the subagents key's session started: their runs
// cancelled, their queued work dropped, their records finished (a child
// still running is stopped for good even if the process ends before its
// run does), and the spawns and announcements being journaled not queued.
// It returns how many children it stopped. within runs first under the
// same gate (/stop's cancel of the session's own run, which cancels the
// spawns that run has not begun). /stop, and /new, /reset, /delete and
// the API's reset or delete, whose session has nothing to do with the
// task any more (its result would arrive into the next session unasked).
func (c commander) stopChildren(ctx context.Context, key routing.Key, within func()) int {
	d := c.d
	if key.IsSubagent() {
		if within != nil {
			within()
		}
		return 0 // a subagent starts none
	}
	parent := d.moves.resolve(key.Canonical())
	d.spawns.gate.Lock()
	if within != nil {
		within()
	}
	kids, n := d.spawns.stopLocked(parent)
	var items []lanes.Item
	ids := make([]string, 0, len(kids))
	for child, id := range kids {
		items = append(items, c.cancelKey(child)...)
		ids = append(ids, id)
	}
	d.spawns.gate.Unlock()
	c.dropStopped(ctx, items)
	d.finish(ids...)
	return n + len(kids)
}

// familyOf is the family of agent work a being journaled as id, for the
// gate: a child's task (its parent the session that spawned it: a.Parent,
// or its entry's spawnedBy) or a child's result announced into its parent.
// Other work, and a child whose parent is unknown, have none. A parent
// whose chat moved is filed under its key now.
func (d *Dispatcher) familyOf(a agents.Dispatch, id string) (family, bool) {
	switch {
	case a.Subagent && a.Key.IsSubagent():
		parent := a.Parent
		if parent.IsZero() {
			parent = d.spawnerOf(a.Key)
		}
		if parent.IsZero() {
			return family{}, false
		}
		return family{parent: d.moves.resolve(parent.Canonical()), child: a.Key.Canonical()}, true
	case strings.HasPrefix(id, announcePrefix):
		return family{parent: d.moves.resolve(a.Key.Canonical())}, true
	}
	return family{}, false
}

// indexChild records w's child under its parent when w is a child's task
// (queued at spawn, at start, again after a failure).
func (d *Dispatcher) indexChild(w *work) {
	if w.Agent == nil || !w.Key.IsSubagent() || w.RecordID == "" {
		return
	}
	parent, err := routing.Parse(w.Agent.Parent)
	if w.Agent.Parent == "" || err != nil {
		parent = d.spawnerOf(w.Key) // journaled before the parent was
	}
	if parent.IsZero() {
		return
	}
	d.spawns.add(family{parent: d.moves.resolve(parent.Canonical()), child: w.Key.Canonical()}, w.RecordID)
}

// spawnerOf is the session that spawned child, from its entry; zero when
// unknown (no entry, none recorded, a store that cannot be read).
func (d *Dispatcher) spawnerOf(child routing.Key) routing.Key {
	st, err := d.opts.Sessions.Store(child.Agent)
	if err != nil {
		return routing.Key{}
	}
	e, ok, err := st.Get(child)
	if err != nil || !ok || e.SpawnedBy == "" {
		if err != nil {
			d.log.Warn("subagent's parent unknown: its session could not be read", zap.Stringer("session_key", child), zap.Error(err))
		}
		return routing.Key{}
	}
	parent, err := routing.Parse(e.SpawnedBy)
	if err != nil {
		return routing.Key{}
	}
	return parent
}
