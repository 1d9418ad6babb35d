package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Check inspects the durable state below stateDir without changing
// anything and without taking locks, so it may run beside the daemon: each
// agent's index against its transcripts (missing, orphaned, unrenamed,
// lagging counters, unreadable index), bad transcript lines, lock files
// and the ingress journal. Problems come in that order (per agent, then
// locks, then the journal, then bad lines) and in sorted order within.
func Check(ctx context.Context, stateDir string, opts sessions.CheckOptions) ([]sessions.Problem, error) {
	opts = opts.WithDefaults()
	if _, err := os.Stat(stateDir); err != nil {
		return nil, fmt.Errorf("sessions: check: state directory: %w", err)
	}
	// The key moves recorded when chats moved: a transcript's header
	// keeps the key its session started under, and an entry rebuilt from
	// it goes where the session was moved to.
	moves, _, err := sessions.ReadKeyMoves(ctx, NewCursors(filepath.Join(stateDir, cursorsDir), opts.LockTimeout))
	if err != nil {
		return nil, fmt.Errorf("sessions: check: %w", err)
	}
	var out, badLines []sessions.Problem
	agentsDir := filepath.Join(stateDir, "agents")
	ents, err := os.ReadDir(agentsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sessions: check: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || !routing.ValidID(e.Name()) {
			continue
		}
		dir := filepath.Join(agentsDir, e.Name(), "sessions")
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sessions: check: %w", err)
		}
		c := &agentCheck{agent: e.Name(), dir: dir, now: opts.Now, opts: opts, moves: moves}
		if err := c.run(); err != nil {
			return nil, err
		}
		out = append(out, c.problems...)
		badLines = append(badLines, c.badLines...)
	}
	ps, err := checkLocks(stateDir, opts.Now)
	if err != nil {
		return nil, err
	}
	out = append(out, ps...)
	out = append(out, checkJournal(stateDir, opts)...)
	return append(out, badLines...), nil
}

// Repair applies the plans of the fixable problems (as returned by Check on
// the same stateDir), in order, and returns one error per problem: nil when
// it was repaired (or turned out fixed meanwhile), ErrNotFixable when it
// needs a human. Index changes are made under the store lock the daemon
// takes too, through the store's own commit; transcripts are never
// deleted. When it returns, every index it changed is whole in
// sessions.json (its change log folded).
func Repair(ctx context.Context, stateDir string, problems []sessions.Problem, opts sessions.CheckOptions) []error {
	r := &repairer{stateDir: stateDir, opts: opts.WithDefaults(), touched: map[string]*Store{}}
	errs := make([]error, len(problems))
	edited := make([]bool, len(problems)) // the repair changed an index
	for i, p := range problems {
		if !p.Fixable || p.Plan == nil {
			errs[i] = sessions.ErrNotFixable
			continue
		}
		before := r.edits
		if err := p.Plan(ctx, r); err != nil {
			errs[i] = fmt.Errorf("sessions: repair %s: %w", p.Code, err)
		}
		edited[i] = r.edits != before
	}
	if err := r.close(); err != nil {
		// The changes are durable in the change log, but the index is not
		// whole in sessions.json: say so on the repairs that changed it.
		for i, p := range problems {
			if errs[i] == nil && edited[i] {
				errs[i] = fmt.Errorf("sessions: repair %s: %w", p.Code, err)
			}
		}
	}
	return errs
}

// repairer holds what repairs share: a passive Manager opened on first use
// (for the store locks and commits).
type repairer struct {
	stateDir string
	opts     sessions.CheckOptions
	m        *Manager
	touched  map[string]*Store // stores whose index a repair changed, by agent
	edits    int               // index changes made so far
}

func (r *repairer) store(agent string) (*Store, error) {
	if r.m == nil {
		m, err := Open(Options{StateDir: r.stateDir, CacheTTL: 0, LockTimeout: r.opts.LockTimeout,
			Logger: zap.NewNop(), Now: func() time.Time { return r.opts.Now }, Passive: true})
		if err != nil {
			return nil, err
		}
		r.m = m
	}
	return r.m.Store(agent)
}

// editIndex applies fn to agent's index as one commit (read-modify-write
// under the store lock, re-reading the index first).
func (r *repairer) editIndex(ctx context.Context, agent string, fn func(o *opTx)) error {
	st, err := r.store(agent)
	if err != nil {
		return err
	}
	r.touched[agent] = st
	r.edits++
	return st.commit(ctx, func(o *opTx) error { fn(o); return nil })
}

// close folds the change logs of the stores repairs wrote (so the index is
// whole in sessions.json, as doctor always left it) and closes the Manager.
func (r *repairer) close() error {
	if r.m == nil {
		return nil
	}
	var err error
	for _, st := range r.touched {
		err = errors.Join(err, st.fold())
	}
	return errors.Join(err, r.m.Close())
}

// repairPlan makes fn a Problem's Plan: Repair runs it with its repairer.
func repairPlan(fn func(ctx context.Context, r *repairer) error) func(context.Context, any) error {
	return func(ctx context.Context, r any) error { return fn(ctx, r.(*repairer)) }
}
