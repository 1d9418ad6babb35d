package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

// dirLocks holds the state dirs' daemon locks a migration takes: the
// files and sqlite sides may share one state dir, whose lock (a flock,
// per open file) must then be taken once.
type dirLocks struct {
	// op names the command in errors.
	op   string
	mu   sync.Mutex
	held map[string]*heldLock
}

// newDirLocks returns a migration's empty set of held locks.
func newDirLocks() *dirLocks { return newDirLocksFor("storage migrate") }

// newDirLocksFor returns the empty set of held locks of command op.
func newDirLocksFor(op string) *dirLocks { return &dirLocks{op: op, held: map[string]*heldLock{}} }

type heldLock struct {
	n       int
	release func()
}

// lockDir makes dir absolute, creates it when create (else it must
// exist) and takes its daemon lock (gatewayd.LockStateDir) unless this
// migration holds it already; unlock gives this use back.
func (l *dirLocks) lockDir(dir string, create bool) (abs string, unlock func(), err error) {
	abs, err = filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("%s: state dir: %w", l.op, err)
	}
	if _, err := os.Stat(abs); err != nil {
		if !create {
			return "", nil, fmt.Errorf("%s: state dir %s: %w", l.op, abs, err)
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return "", nil, fmt.Errorf("%s: state dir: %w", l.op, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.held[abs]
	if !ok {
		release, err := gatewayd.LockStateDir(abs)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", l.op, err)
		}
		h = &heldLock{release: release}
		l.held[abs] = h
	}
	h.n++
	return abs, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if h.n--; h.n == 0 {
			h.release()
			delete(l.held, abs)
		}
	}, nil
}

// openSQLiteSide opens stateDir/gateway.sqlite under the state dir's
// daemon lock. A source must exist; a target is created (and migrated).
func openSQLiteSide(ctx context.Context, cfg *configs.Config, f migrateFlags, create bool, locks *dirLocks) (*side, error) {
	dir := f.sqliteStateDir
	if dir == "" {
		dir = cfg.StateDir
	}
	abs, unlock, err := locks.lockDir(dir, create)
	if err != nil {
		return nil, err
	}
	path := sqlitestore.PathIn(abs)
	if !create {
		if _, err := os.Stat(path); err != nil {
			unlock()
			return nil, fmt.Errorf("%s: sqlite database %s: %w", locks.op, path, err)
		}
	}
	db, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path, Logger: zap.NewNop(), BusyTimeout: cfg.Session.LockTimeout})
	if err != nil {
		unlock()
		return nil, fmt.Errorf("%s: %w", locks.op, err)
	}
	return &side{Importer: db.Transfer(), where: path,
		store: func(agent string) (sessions.AgentStore, error) { return db.Store(agent, nil), nil },
		delivery: func() (sessions.Delivery, func(), error) {
			return db.Delivery(), func() {}, nil
		},
		pairing: db.Pairing(), cursors: db.Cursors(), rooms: db.RoomLog(), usage: db.Usage(), dead: db.DeadLetters(),
		memory: db.Memory(), jobs: db.Jobs(), limits: db.Limits(), close: func() {
			_ = db.Close()
			unlock()
		}}, nil
}
