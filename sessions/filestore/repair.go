package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Counter repair. Counters are coalesced (flushed every FlushInterval), so a
// crash may lose up to one interval of them; on start every session whose
// transcript may hold more than its entry says is checked and its
// messageCount (and compactionOffset) raised to what the transcript holds.
//
// The check is off the path to the first reply: a store's first use starts
// a background pass over its sessions, and a session used before the pass
// reached it is checked on that use (repairKey), alone. List, Recent and
// GetByID, which answer about every session, wait for the pass. A clean
// shutdown (Close, with every counter written) leaves a mark naming the
// index and change log it left; a start that finds the files as the mark
// names them has nothing to check, not even a transcript's time. The mark
// is removed when a process first opens the store (newStore, passive tools
// as well), before anything can be written through it: while it is there,
// no transcript has been written since the shutdown that left it.

// mtimeSlack covers the coarse granularity of file modification times.
const mtimeSlack = 2 * time.Second

// cleanName is the clean-shutdown mark beside the index.
const cleanName = "counters.clean"

// repairBatch is how many sessions the background pass checks between
// writes of their fixes.
const repairBatch = 256

// repairPassHook, set only by tests, runs as a background pass starts.
var repairPassHook func(ctx context.Context, s *Store)

// counterRepair is a store's counter repair state. Which sessions are left
// to check is in their slots (slot.repair): a start lists nothing.
type counterRepair struct {
	// reads counts the transcripts read to check counters (tests).
	reads atomic.Int64
	once  sync.Once
	// The fields below are guarded by the Store's mu.
	//
	// started is set when the repair starts; slots loaded before are due
	// (every session at the start is checked), slots loaded after are not.
	started bool
	// checking counts the checks of first uses under way.
	checking int
	// checked is signalled (on the Store's mu) when checks end.
	checked sync.Cond
	// complete says the pass checked every session (Close may then mark
	// the store clean).
	complete bool
	// clean says the store was opened on a valid clean mark: no
	// session is due.
	clean bool
	// ended is closed when the background pass ended.
	ended chan struct{}
}

// A slot's repair state.
const (
	repairNone    = iota // nothing to check
	repairDue            // to check before its first use
	repairRunning        // a check of it is under way
)

// cleanMark is what the clean-shutdown mark records: the index and change
// log as the clean shutdown left them, and when it was written.
type cleanMark struct {
	Index markStamp `json:"index"`
	Delta markStamp `json:"delta"`
	At    time.Time `json:"at"`
}

// markStamp is a fileStamp in the mark (comparable: the time as Unix
// nanoseconds).
type markStamp struct {
	Exists bool   `json:"exists"`
	Ino    uint64 `json:"ino"`
	Size   int64  `json:"size"`
	Mtime  int64  `json:"mtimeNs"`
}

func toMark(st fileStamp) markStamp {
	m := markStamp{Exists: st.exists, Ino: st.ino, Size: st.size}
	if st.exists {
		m.Mtime = st.mtime.UnixNano()
	}
	return m
}

// statStamp stamps path (exists false when it does not).
func statStamp(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	return stampOf(fi), nil
}

// loadRepairLocked is the repair state of slots loaded now.
func (s *Store) loadRepairLocked() uint8 {
	if s.m.opts.Passive || s.repair.started || s.repair.clean {
		return repairNone
	}
	return repairDue
}

// carryRepairLocked gives the slots of a reload the repair state their
// sessions had, while the repair runs.
func (s *Store) carryRepairLocked(slots map[string]slot) {
	if !s.repair.started || s.repair.complete {
		return
	}
	for k, sl := range slots {
		if old, ok := s.slots[k]; ok && old.repair != repairNone && old.sameSession(sl) {
			sl.repair = old.repair
			slots[k] = sl
		}
	}
}

// ensureRepaired starts the counter repair once: it loads the index (its
// slots are due unless the store was opened on a clean mark) and starts
// the background pass. It does not wait for the pass.
func (s *Store) ensureRepaired() {
	if s.m.opts.Passive {
		return
	}
	r := &s.repair
	r.once.Do(func() {
		r.ended = make(chan struct{})
		s.mu.Lock()
		err := s.viewLocked()
		r.started = true
		empty := err == nil && (len(s.slots) == 0 || r.clean)
		r.complete = empty
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("counter repair from transcripts failed", zap.Error(err))
		}
		if err != nil || empty {
			close(r.ended)
			return
		}
		if !s.m.goBackground(func(ctx context.Context) { s.repairPass(ctx) }) {
			close(r.ended) // closing: nothing more is checked
		}
	})
}

// readCleanMark says whether the clean mark names the files as they are,
// and removes it (durably) either way, before anything is written.
func (s *Store) readCleanMark() (bool, error) {
	markPath := filepath.Join(s.dir, cleanName)
	data, err := os.ReadFile(markPath)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sessions: counter repair: read the clean mark: %w", err)
	}
	var mk cleanMark
	idx, ierr := statStamp(s.indexPath)
	dl, derr := statStamp(s.deltaPath)
	valid := json.Unmarshal(data, &mk) == nil && ierr == nil && derr == nil &&
		mk.Index == toMark(idx) && mk.Delta == toMark(dl)
	if err := os.Remove(markPath); err != nil {
		return false, fmt.Errorf("sessions: counter repair: remove the clean mark: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return false, fmt.Errorf("sessions: counter repair: remove the clean mark: %w", err)
	}
	return valid, nil
}

// takeLocked claims the check of k if it is due, returning its session
// id; when another check of k is under way it waits for its end first if
// wait is set (a use), and returns at once if not (the pass). mine is
// false when k needs no check (any more) or another has it.
func (s *Store) takeLocked(k string, wait bool) (id string, mine bool) {
	for {
		sl, ok := s.slots[k]
		switch {
		case !ok || sl.repair == repairNone:
			return "", false
		case sl.repair == repairDue:
			sl.repair = repairRunning
			s.slots[k] = sl
			return sl.id(), true
		case !wait:
			return "", false
		}
		s.repair.checked.Wait()
	}
}

// finishLocked marks the check of k (session id) done.
func (s *Store) finishLocked(k, id string) {
	if sl, ok := s.slots[k]; ok && sl.isSession(id) && sl.repair != repairNone {
		sl.repair = repairNone
		s.slots[k] = sl
	}
}

// repairKey checks k before its use unless the pass did already; when the
// pass is checking it, it waits for that.
func (s *Store) repairKey(k string) {
	s.ensureRepaired()
	s.mu.Lock()
	id, mine := s.takeLocked(k, true)
	if mine {
		s.repair.checking++
	}
	s.mu.Unlock()
	if !mine {
		return
	}
	s.checkCounters(context.Background(), k, id)
	s.mu.Lock()
	s.finishLocked(k, id)
	s.repair.checking--
	s.repair.checked.Broadcast()
	s.mu.Unlock()
}

// awaitRepair waits for the background pass (List, Recent and GetByID
// answer about every session).
func (s *Store) awaitRepair() {
	s.ensureRepaired()
	if s.repair.ended != nil {
		<-s.repair.ended
	}
}

// repairPass checks the sessions no use checked first, a batch at a time,
// until none is left or ctx ends (Close).
func (s *Store) repairPass(ctx context.Context) {
	r := &s.repair
	defer close(r.ended)
	if repairPassHook != nil {
		repairPassHook(ctx, s)
	}
	s.mu.Lock()
	var due []string
	for k, sl := range s.slots {
		if sl.repair == repairDue {
			due = append(due, k)
		}
	}
	s.mu.Unlock()
	fixed := 0
	var keys, ids []string
	for len(due) > 0 && ctx.Err() == nil {
		batch := due[:min(repairBatch, len(due))]
		due = due[len(batch):]
		keys, ids = keys[:0], ids[:0]
		s.mu.Lock()
		for _, k := range batch {
			if id, mine := s.takeLocked(k, false); mine {
				keys, ids = append(keys, k), append(ids, id)
			}
		}
		s.mu.Unlock()
		for i, k := range keys {
			if s.checkCounters(ctx, k, ids[i]) {
				fixed++
			}
		}
		s.mu.Lock()
		for i, k := range keys {
			s.finishLocked(k, ids[i])
		}
		r.checked.Broadcast()
		s.mu.Unlock()
	}
	s.mu.Lock()
	// The rest are being checked by their first uses.
	for r.checking > 0 {
		r.checked.Wait()
	}
	r.complete = ctx.Err() == nil
	s.mu.Unlock()
	if fixed > 0 {
		s.log.Info("lagging counters repaired from transcripts", zap.Int("sessions", fixed))
	}
}

// checkCounters raises the counters of k's entry (session id) to what its
// transcript holds, when the transcript was modified after the entry's
// updatedAt (within mtimeSlack: file times come from a coarse kernel clock
// and may trail the updatedAt written just before an append): one stat,
// and a read of the few modified since. The fix is applied at once and
// written with the next flush, as counters are.
func (s *Store) checkCounters(ctx context.Context, k, id string) bool {
	path, err := transcriptPath(s.dir, id)
	if err != nil {
		return false
	}
	s.mu.Lock()
	sl, ok := s.slots[k]
	var updated time.Time
	if ok = ok && sl.isSession(id); ok {
		updated = sl.updatedAt()
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.ModTime().After(updated.Add(-mtimeSlack)) {
		return false
	}
	t, err := s.Transcript(id)
	if err != nil {
		return false
	}
	s.repair.reads.Add(1)
	n, off, err := t.Stats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("transcript unreadable during counter repair", zap.String("session_id", id), zap.Error(err))
		}
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok = s.slots[k]
	if !ok || !sl.isSession(id) {
		return false
	}
	msgs, offset := int(sl.c.int(fieldMessageCount)), sl.c.int(fieldCompactionOffset)
	if n <= msgs && off <= offset {
		return false
	}
	return s.addDeltaLocked(k, &delta{sessionID: id, msgs: max(0, n-msgs),
		compaction: off, updatedAt: s.m.now()})
}

// markClean writes the clean-shutdown mark after Close flushed and folded
// the store, when its repair pass checked every session this run.
func (s *Store) markClean() error {
	s.mu.Lock()
	complete := s.repair.complete
	s.mu.Unlock()
	if !complete {
		return nil
	}
	idx, err := statStamp(s.indexPath)
	if err != nil {
		return fmt.Errorf("sessions: clean mark %s: %w", s.agentID, err)
	}
	dl, err := statStamp(s.deltaPath)
	if err != nil {
		return fmt.Errorf("sessions: clean mark %s: %w", s.agentID, err)
	}
	data, err := json.Marshal(cleanMark{Index: toMark(idx), Delta: toMark(dl), At: time.Now()})
	if err != nil {
		return fmt.Errorf("sessions: clean mark %s: %w", s.agentID, err)
	}
	if err := writeFileAtomic(filepath.Join(s.dir, cleanName), data); err != nil {
		return fmt.Errorf("sessions: clean mark %s: %w", s.agentID, err)
	}
	return nil
}
