package filestore

import (
	"bytes"
	"context"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// txn is one batch of durable changes, applied under the store lock.
type txn struct {
	s   *Store
	ctx context.Context // carries the held store lock
	now time.Time

	// archive is the archive list (archive.json and its change log,
	// store_archive.go), loaded on first use: the store's shared map
	// until archCloned, then this batch's copy.
	archive       map[string][]sessions.Archived
	archiveLoaded bool
	archCloned    bool
	archiveDirty  bool
	archBase      archiveState        // the list as loaded
	archChanged   map[string]struct{} // keys whose list this batch changed
	archLines     []byte              // the change log lines written
	archFolded    bool                // the list was written whole
	pre, post     []func() error
}

// opTx is one op's view of the batch; its changes apply only if it succeeds.
type opTx struct {
	tx   *txn
	puts map[string]*sessions.Entry // nil value: delete
	arch map[string][]sessions.Archived
	// renames are the keys this op moved a session to, each with the key
	// it came from (RenameKey): each becomes one change log line.
	renames   map[string]string
	pre, post []func() error
}

func (tx *txn) newOp() *opTx {
	return &opTx{tx: tx, puts: map[string]*sessions.Entry{}, arch: map[string][]sessions.Archived{}, renames: map[string]string{}}
}

func (o *opTx) now() time.Time { return o.tx.now }

func (o *opTx) get(k string) (sessions.Entry, bool) {
	if e, ok := o.puts[k]; ok {
		if e == nil {
			return sessions.Entry{}, false
		}
		return *e, true
	}
	sl, ok := o.tx.s.slots[k]
	if !ok {
		return sessions.Entry{}, false
	}
	return sl.entry(), true
}

func (o *opTx) put(k string, e sessions.Entry) { o.puts[k] = &e }
func (o *opTx) del(k string)                   { o.puts[k] = nil }

// archived returns key's archive history, newest first.
func (o *opTx) archived(k string) ([]sessions.Archived, error) {
	if l, ok := o.arch[k]; ok {
		return l, nil
	}
	if err := o.tx.loadArchive(); err != nil {
		return nil, err
	}
	return append([]sessions.Archived(nil), o.tx.archive[k]...), nil
}

func (o *opTx) setArchived(k string, l []sessions.Archived) {
	if len(l) > sessions.MaxArchivedPerKey {
		l = l[:sessions.MaxArchivedPerKey]
	}
	o.arch[k] = l
}

func (tx *txn) loadArchive() error {
	if tx.archiveLoaded {
		return nil
	}
	st, err := tx.s.archiveList()
	if err != nil {
		return err
	}
	tx.archive, tx.archBase, tx.archiveLoaded = st.m, st, true
	return nil
}

// archiveSession records e (the current session of key k) as archived and
// schedules its transcript's rename to <id>.jsonl.reset|deleted.<ts> and the
// removal of its lock file, both after the index is written.
func (o *opTx) archiveSession(k string, e sessions.Entry, reason string, deleted bool) (sessions.Archived, error) {
	dir := o.tx.s.dir
	src, err := transcriptPath(dir, e.SessionID)
	if err != nil {
		return sessions.Archived{}, err
	}
	infix := resetInfix
	if deleted {
		infix = deletedInfix
	}
	name := filepath.Base(src) + infix + archiveTS(o.now())
	for i := 1; fileExists(filepath.Join(dir, name)); i++ {
		name = filepath.Base(src) + infix + archiveTS(o.now()) + "-" + strconv.Itoa(i)
	}
	rec := sessions.Archived{
		SessionID: e.SessionID, Reason: reason, ArchivedAt: o.now(), File: name, Title: e.Title,
		SessionStartedAt: e.SessionStartedAt, UpdatedAt: e.UpdatedAt, MessageCount: e.MessageCount,
		TotalTokens: e.TotalTokens, Deleted: deleted,
	}
	l, err := o.archived(k)
	if err != nil {
		return sessions.Archived{}, err
	}
	o.setArchived(k, append([]sessions.Archived{rec}, l...))
	dst := filepath.Join(dir, name)
	ctx := o.tx.ctx
	locks := o.tx.s.m.locks
	tcache := &o.tx.s.tcache
	o.post = append(o.post, func() error {
		tcache.drop(e.SessionID)
		if fileExists(src) {
			if err := renameDurable(src, dst); err != nil {
				return fmt.Errorf("archive transcript %s: %w", e.SessionID, err)
			}
		}
		removeLockFile(ctx, locks, src+lockExt)
		return nil
	})
	return rec, nil
}

// removeLockFile deletes a session's lock file if nobody holds it. It runs
// under the store lock, together with the session's removal (SPEC §3.5).
func removeLockFile(ctx context.Context, locks *lockSet, path string) {
	if !fileExists(path) {
		return
	}
	l := locks.get(path)
	_, unlock, err := l.acquireWithin(ctx, 50*time.Millisecond)
	if err != nil {
		return // in use: maintenance removes it later
	}
	_ = os.Remove(path)
	locks.forget(path)
	unlock()
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// applyLocked merges the op's changes into the batch and the cache.
func (o *opTx) applyLocked() error {
	s := o.tx.s
	for k, e := range o.puts {
		old, exists := s.slots[k]
		if e == nil {
			if exists {
				delete(s.slots, k)
				if id := old.id(); s.byID != nil && s.byID[id] == k {
					delete(s.byID, id)
				}
				delete(s.pending, k)
				s.keys, s.dirty = nil, true
				s.changed[k] = struct{}{}
			}
			continue
		}
		c, err := packEntry(e)
		if err != nil {
			return err
		}
		sl := newSlot(c)
		// The same session keeps its counter repair state; a new one is
		// due only if it is there when the repair starts.
		sl.repair = s.loadRepairLocked()
		if exists {
			if bytes.Equal(old.c, c) {
				continue
			}
			if !old.sameSession(sl) {
				delete(s.pending, k)
			} else {
				sl.repair = old.repair
			}
		} else {
			s.keys = nil
		}
		s.slots[k] = sl
		if s.byID != nil {
			if exists && !old.sameSession(sl) && s.byID[old.id()] == k {
				delete(s.byID, old.id())
			}
			s.byID[sl.id()] = k
		}
		s.dirty = true
		s.changed[k] = struct{}{}
	}
	for to, from := range o.renames {
		s.renamed[to] = from
	}
	if len(o.arch) > 0 {
		if err := o.tx.loadArchive(); err != nil {
			return err
		}
		if !o.tx.archCloned {
			o.tx.archive, o.tx.archCloned = maps.Clone(o.tx.archive), true
			o.tx.archChanged = map[string]struct{}{}
		}
		for k, l := range o.arch {
			o.tx.archChanged[k] = struct{}{}
			if len(l) == 0 {
				delete(o.tx.archive, k)
			} else {
				o.tx.archive[k] = l
			}
		}
		o.tx.archiveDirty = true
	}
	o.tx.pre = append(o.tx.pre, o.pre...)
	o.tx.post = append(o.tx.post, o.post...)
	return nil
}
