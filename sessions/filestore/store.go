package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Store is one agent's sessions.json plus its transcripts. It is safe for
// concurrent use; several processes may share the files (SPEC §3.3).
//
// The index is cached in memory. Reads are served from the cache for up to
// the cache TTL, then re-validated against the file's inode, size and mtime.
// Durable changes (create, reset, delete, Patch, Switch) run as a
// read-modify-write under the store lock and are batched across concurrent
// callers into one atomic file write. Routine updates (counters, the
// origin of each message, lastInteractionAt) are applied to the cache at once
// and kept in a dirty set that the Manager flushes every FlushInterval.
type Store struct {
	m           *Manager
	agentID     string
	dir         string
	indexPath   string
	deltaPath   string // the change log beside the index (store_delta.go)
	archivePath string
	lock        *fileLock
	log         *zap.Logger

	mu      sync.Mutex          // guards the fields below
	slots   map[string]slot     // cache: disk state with pending applied
	keys    []string            // sorted keys of slots; nil when stale
	stamp   fileStamp           // the index file as last read or written here
	checked time.Time           // when stamp was last validated
	loaded  bool                // slots reflect the file at stamp
	pending map[string]*delta   // coalesced updates not yet on disk
	dirty   bool                // slots differ from the file (a write is due)
	changed map[string]struct{} // keys changed since the last write
	// renamed maps each key a session moved to since the last write to
	// the key it came from (RenameKey): one change log line each.
	renamed map[string]string
	// byID maps each entry's session id to its key, kept with slots, so
	// a session is found by id without a scan; nil until its first use
	// after a load (byIDLocked).
	byID   map[string]string
	dstamp fileStamp // the change log as last read or written here
	// writing is set while this store's commit writes its files, holding
	// the cross-process store lock: a change of the files seen meanwhile
	// is that write (its stamps are taken when it ends), not a reason to
	// reload the whole index.
	writing bool
	reloads int // full reads of the index (tests: own writes cause none)
	// deltaGood is the change log's length in whole lines.
	deltaGood int64
	repair    counterRepair   // counter repair from transcripts (repair.go)
	capWarnAt atomic.Int64    // unix ns of the last warning of a cap not met (store_cap.go)
	tcache    transcriptCache // open transcripts, shared

	amu  sync.Mutex   // guards arch
	arch archiveState // the archive list as last read or written here (store_archive.go)

	cmu        sync.Mutex  // guards queue, committing
	queue      []*commitOp // durable changes waiting for the next batch
	committing bool        // a leader goroutine is writing batches
}

func newStore(m *Manager, agentID string) (*Store, error) {
	dir, err := agentSessionsDir(m.opts.StateDir, agentID)
	if err != nil {
		return nil, err
	}
	if err := mkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("sessions: store %s: %w", agentID, err)
	}
	idx := filepath.Join(dir, indexName)
	s := &Store{
		m: m, agentID: agentID, dir: dir, indexPath: idx,
		archivePath: filepath.Join(dir, archiveName),
		deltaPath:   filepath.Join(dir, deltaName),
		changed:     map[string]struct{}{},
		renamed:     map[string]string{},
		lock:        m.locks.get(idx + lockExt),
		log:         m.log.With(zap.String("agent_id", agentID)),
		pending:     map[string]*delta{},
	}
	s.repair.checked.L = &s.mu
	// The clean mark goes before anything can be written through the
	// store (repair.go): a transcript written after it would not be
	// checked at the next start.
	if s.repair.clean, err = s.readCleanMark(); err != nil {
		return nil, fmt.Errorf("sessions: store %s: %w", agentID, err)
	}
	// Nothing to check: a Close before the first use leaves the mark again.
	s.repair.complete = s.repair.clean
	return s, nil
}

// AgentID is the agent whose sessions this store holds.
func (s *Store) AgentID() string { return s.agentID }

// Dir is the directory holding sessions.json and the transcripts.
func (s *Store) Dir() string { return s.dir }

// Lock takes the store lock for a sequence of operations. Pass the returned
// context to Store methods: they see the lock as held and do not wait for it.
// unlock must be called; the max-hold watchdog releases a forgotten lock.
func (s *Store) Lock(ctx context.Context) (context.Context, func(), error) {
	return s.lock.Acquire(ctx)
}

// viewLocked makes the cache current enough for a read: within the TTL it is
// used as is, after it the file is re-validated and reloaded if it changed.
func (s *Store) viewLocked() error {
	now := time.Now()
	ttl := s.m.cacheTTL
	if s.loaded && ttl > 0 && now.Sub(s.checked) < ttl {
		return nil
	}
	return s.revalidateLocked(now)
}

// revalidateLocked reloads the index if the file is not the one last seen.
func (s *Store) revalidateLocked(now time.Time) error {
	if s.loaded && s.writing {
		// Our own commit holds the store lock and is writing: nobody else
		// can have changed the files, and the cache already holds what it
		// writes.
		return nil
	}
	fi, err := os.Stat(s.indexPath)
	var st fileStamp
	switch {
	case err == nil:
		st = stampOf(fi)
	case errors.Is(err, os.ErrNotExist):
	default:
		return fmt.Errorf("sessions: stat index: %w", err)
	}
	var dst fileStamp
	switch fi, err := os.Stat(s.deltaPath); {
	case err == nil:
		dst = stampOf(fi)
	case errors.Is(err, os.ErrNotExist):
	default:
		return fmt.Errorf("sessions: stat change log: %w", err)
	}
	if s.loaded && st == s.stamp && dst == s.dstamp {
		s.checked = now
		return nil
	}
	if err := s.reloadLocked(); err != nil {
		return err
	}
	s.checked = now
	return nil
}

// reloadLocked reads the index file and re-applies the pending updates.
func (s *Store) reloadLocked() error {
	s.reloads++
	var (
		slots  map[string]slot
		st     fileStamp
		repair = s.loadRepairLocked()
	)
	f, err := os.Open(s.indexPath)
	switch {
	case err == nil:
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("sessions: load index: %w", err)
		}
		st = stampOf(fi)
		if slots, err = readIndex(f, fi.Size(), repair); err != nil {
			return fmt.Errorf("sessions: load index %s: %w", s.indexPath, err)
		}
	case errors.Is(err, os.ErrNotExist):
		slots = map[string]slot{}
	default:
		return fmt.Errorf("sessions: load index: %w", err)
	}
	dst, good, err := readDelta(s.deltaPath, func(k string, c compactEntry, del bool) {
		if del {
			delete(slots, k)
		} else {
			sl := newSlot(c)
			sl.repair = repair
			slots[k] = sl
		}
	})
	if err != nil {
		return err
	}
	s.carryRepairLocked(slots)
	s.slots, s.keys, s.stamp, s.loaded = slots, nil, st, true
	s.dstamp, s.deltaGood = dst, good
	s.byID = nil
	s.dirty = false
	s.changed = map[string]struct{}{}
	s.renamed = map[string]string{}
	for k, d := range s.pending {
		sl, ok := s.slots[k]
		if !ok {
			continue
		}
		if s.applyDeltaLocked(k, sl, d) {
			s.dirty = true
			s.changed[k] = struct{}{}
		}
	}
	return nil
}

// keyString validates that key belongs to this store's agent.
func (s *Store) keyString(key routing.Key) (string, error) {
	if key.IsZero() {
		return "", fmt.Errorf("sessions: empty session key")
	}
	if key.Agent != s.agentID {
		return "", fmt.Errorf("sessions: key %q belongs to agent %q, not %q", sessions.Clip(key.String()), sessions.Clip(key.Agent), s.agentID)
	}
	return key.String(), nil
}

// Get returns the entry for key.
func (s *Store) Get(key routing.Key) (sessions.Entry, bool, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, false, err
	}
	s.repairKey(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.viewLocked(); err != nil {
		return sessions.Entry{}, false, err
	}
	sl, ok := s.slots[k]
	if !ok {
		if err := s.recheckLocked(); err != nil {
			return sessions.Entry{}, false, err
		}
		if sl, ok = s.slots[k]; !ok {
			return sessions.Entry{}, false, nil
		}
	}
	return sl.entry(), true, nil
}

// GetByID returns the current entry whose session id is id.
func (s *Store) GetByID(id string) (sessions.Entry, bool, error) {
	s.awaitRepair()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.viewLocked(); err != nil {
		return sessions.Entry{}, false, err
	}
	for try := 0; ; try++ {
		if sl, ok := s.slotByIDLocked(id); ok {
			return sl.entry(), true, nil
		}
		if try > 0 {
			return sessions.Entry{}, false, nil
		}
		if err := s.recheckLocked(); err != nil {
			return sessions.Entry{}, false, err
		}
	}
}

// recheckLocked re-validates a cache that has just missed: within the TTL a
// miss may only mean another process added or reset the session since the
// files were last checked, and "not found" is not answered from stale data.
func (s *Store) recheckLocked() error {
	return s.revalidateLocked(time.Now())
}

// List returns every entry, most recently updated first.
func (s *Store) List() ([]sessions.Entry, error) {
	s.awaitRepair()
	s.mu.Lock()
	if err := s.viewLocked(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	cs := make([]compactEntry, 0, len(s.slots))
	for _, sl := range s.slots {
		cs = append(cs, sl.c)
	}
	s.mu.Unlock()
	all := make([]sessions.Entry, len(cs))
	for i, c := range cs {
		all[i] = c.entry()
	}
	// Sort indexes, not the (large) entries themselves.
	idx := make([]int32, len(all))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		ea, eb := &all[a], &all[b]
		if c := eb.UpdatedAt.Compare(ea.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(ea.SessionKey, eb.SessionKey)
	})
	out := make([]sessions.Entry, len(all))
	for i, j := range idx {
		out[i] = all[j]
	}
	return out, nil
}

// encodeLocked renders the index: one entry per line, keys sorted, so the
// file is stable (identical state, identical bytes) and diffable, each
// entry as json.Marshal writes it (readIndex reads this form fast).
func (s *Store) encodeLocked() ([]byte, error) {
	if s.keys == nil {
		s.keys = make([]string, 0, len(s.slots))
		for k := range s.slots {
			s.keys = append(s.keys, k)
		}
		slices.Sort(s.keys)
	}
	size := 4
	for _, k := range s.keys {
		size += len(k) + len(s.slots[k].c)*3 + 8
	}
	buf := make([]byte, 0, size)
	buf = append(buf, '{')
	for i, k := range s.keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '\n')
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("sessions: encode key %q: %w", sessions.Clip(k), err)
		}
		buf = append(buf, kb...)
		buf = append(buf, ": "...)
		buf = s.slots[k].c.appendJSON(buf)
	}
	buf = append(buf, "\n}\n"...)
	return buf, nil
}

var _ sessions.Index = (*Store)(nil)
