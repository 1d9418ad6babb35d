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
// names them has nothing to check. The mark is removed at the start, before
// anything is written.

// mtimeSlack covers the coarse granularity of file modification times.
const mtimeSlack = 2 * time.Second

// cleanName is the clean-shutdown mark beside the index.
const cleanName = "counters.clean"

// repairBatch is how many sessions the background pass checks between
// writes of their fixes.
const repairBatch = 256

// repairPassHook, set only by tests, runs as a background pass starts.
var repairPassHook func(ctx context.Context, s *Store)

// counterRepair is a store's counter repair state.
type counterRepair struct {
	// reads counts the transcripts read to check counters (tests).
	reads atomic.Int64
	once  sync.Once
	mu    sync.Mutex
	// todo holds the sessions not checked yet, by key; nil before the start.
	todo map[string]*repairItem
	// ended is closed when the background pass ended; complete says it
	// checked every session (Close may then mark the store clean).
	ended    chan struct{}
	complete bool
	// since is when the clean mark found at the start was written (zero
	// without one): only transcripts modified after it can hold more than
	// their entries say.
	since time.Time
}

// repairItem is one session to check; done is closed once it was.
type repairItem struct {
	id    string
	taken bool
	done  chan struct{}
}

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

// ensureRepaired starts the counter repair once: it reads and removes the
// clean mark, lists the sessions to check and starts the background pass.
// It does not wait for the pass.
func (s *Store) ensureRepaired() {
	if s.m.opts.Passive {
		return
	}
	r := &s.repair
	r.once.Do(func() {
		r.ended = make(chan struct{})
		todo, since, err := s.repairTodo()
		if err != nil {
			s.log.Warn("counter repair from transcripts failed", zap.Error(err))
		}
		r.mu.Lock()
		r.todo, r.since = todo, since
		r.mu.Unlock()
		if len(todo) == 0 {
			r.complete = err == nil
			close(r.ended)
			return
		}
		if !s.m.goBackground(func(ctx context.Context) { s.repairPass(ctx) }) {
			close(r.ended) // closing: nothing more is checked
		}
	})
}

// repairTodo lists the sessions to check (every one) and, when the clean
// mark names the files as they are, when it was written. The mark is
// removed (durably) either way, before anything is written.
func (s *Store) repairTodo() (map[string]*repairItem, time.Time, error) {
	markPath := filepath.Join(s.dir, cleanName)
	var since time.Time
	if data, err := os.ReadFile(markPath); err == nil {
		var mk cleanMark
		idx, ierr := statStamp(s.indexPath)
		dl, derr := statStamp(s.deltaPath)
		if json.Unmarshal(data, &mk) == nil && ierr == nil && derr == nil &&
			mk.Index == toMark(idx) && mk.Delta == toMark(dl) {
			since = mk.At
		}
		if err := os.Remove(markPath); err != nil {
			return nil, time.Time{}, fmt.Errorf("sessions: counter repair: remove the clean mark: %w", err)
		}
		if err := syncDir(s.dir); err != nil {
			return nil, time.Time{}, fmt.Errorf("sessions: counter repair: remove the clean mark: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.viewLocked(); err != nil {
		return nil, since, err
	}
	todo := make(map[string]*repairItem, len(s.slots))
	for k, sl := range s.slots {
		todo[k] = &repairItem{id: sl.e.SessionID, done: make(chan struct{})}
	}
	return todo, since, nil
}

// take claims k's check: mine is true when the caller must check it; when
// another does, wait is closed once it did. Both are zero when k needs no
// check.
func (r *counterRepair) take(k string) (it *repairItem, mine bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	it = r.todo[k]
	if it == nil {
		return nil, false
	}
	if it.taken {
		return it, false
	}
	it.taken = true
	return it, true
}

// finish marks the checks of items done.
func (r *counterRepair) finish(items map[string]*repairItem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, it := range items {
		delete(r.todo, k)
		close(it.done)
	}
}

// repairKey checks k before its use unless the pass did already; when the
// pass is checking it, it waits for that.
func (s *Store) repairKey(k string) {
	s.ensureRepaired()
	it, mine := s.repair.take(k)
	switch {
	case it == nil:
	case !mine:
		<-it.done
	default:
		s.checkCounters(context.Background(), k, it.id)
		s.repair.finish(map[string]*repairItem{k: it})
	}
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
	fixed := 0
	for ctx.Err() == nil {
		batch := map[string]*repairItem{}
		r.mu.Lock()
		for k, it := range r.todo {
			if len(batch) == repairBatch {
				break
			}
			if !it.taken {
				it.taken = true
				batch[k] = it
			}
		}
		left := len(r.todo)
		r.mu.Unlock()
		if len(batch) == 0 {
			if left == 0 {
				r.mu.Lock()
				r.complete = true
				r.mu.Unlock()
				break
			}
			// The rest are being checked by their first uses.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for k, it := range batch {
			if s.checkCounters(ctx, k, it.id) {
				fixed++
			}
		}
		r.finish(batch)
	}
	if fixed > 0 {
		s.log.Info("lagging counters repaired from transcripts", zap.Int("sessions", fixed))
	}
}

// checkCounters raises the counters of k's entry (session id) to what its
// transcript holds, when the transcript was modified after the entry's
// updatedAt and after the clean mark's time (within mtimeSlack: file times
// come from a coarse kernel clock and may trail the updatedAt written just
// before an append). With a clean mark that is almost never: one stat. The
// fix is applied at once and written with the next flush, as counters are.
func (s *Store) checkCounters(ctx context.Context, k, id string) bool {
	path, err := transcriptPath(s.dir, id)
	if err != nil {
		return false
	}
	s.mu.Lock()
	sl, ok := s.slots[k]
	var updated time.Time
	if ok {
		updated = sl.e.UpdatedAt
	}
	s.mu.Unlock()
	if !ok || sl.e.SessionID != id {
		return false
	}
	s.repair.mu.Lock()
	since := s.repair.since
	s.repair.mu.Unlock()
	fi, err := os.Stat(path)
	if err != nil || !fi.ModTime().After(updated.Add(-mtimeSlack)) ||
		(!since.IsZero() && !fi.ModTime().After(since.Add(-mtimeSlack))) {
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
	if !ok || sl.e.SessionID != id || (n <= sl.e.MessageCount && off <= sl.e.CompactionOffset) {
		return false
	}
	return s.addDeltaLocked(k, &delta{sessionID: id, msgs: max(0, n-sl.e.MessageCount),
		compaction: off, updatedAt: s.m.now()})
}

// markClean writes the clean-shutdown mark after Close flushed and folded
// the store, when its repair pass checked every session this run.
func (s *Store) markClean() error {
	s.repair.mu.Lock()
	complete := s.repair.complete
	s.repair.mu.Unlock()
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
