package sessions

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"go.uber.org/zap"
)

// Journal retention of completed ids for duplicate detection: an id is
// remembered while it is younger than DoneRetention or among the last
// DoneKeep completed ids.
const (
	DoneRetention = 24 * time.Hour
	DoneKeep      = 10000
	// journalCompactMin is how much the log must have grown since its last
	// rewrite before a fully drained journal is rewritten; journalCompactMax
	// forces a rewrite even with records pending.
	journalCompactMin = 256 << 10
	journalCompactMax = 32 << 20
)

// Record is one journaled inbound message.
type Record struct {
	ID         string          `json:"id"` // channel:account:chat:messageId
	AgentID    string          `json:"agentId"`
	SessionKey string          `json:"sessionKey"`
	Payload    json.RawMessage `json:"payload"` // the channel's Inbound, opaque here
	Attempts   int             `json:"attempts"`
	Consumed   bool            `json:"consumed"` // user message is in the transcript
	AcceptedAt time.Time       `json:"acceptedAt"`
}

// Journal is the durable ingress journal (SPEC §3.7): an append-only JSONL
// log in <stateDir>/ingress/journal.jsonl of accept, consumed, attempt and
// done records. Every call returns after its line is fsynced; concurrent
// callers share one fsync. When every record is done the log is rewritten
// to the ids still remembered for duplicate detection. One process holds the
// journal (a flock on journal.jsonl.lock) while it is open.
//
// It is safe for concurrent use.
type Journal struct {
	path       string
	log        *zap.Logger
	now        func() time.Time
	openErr    error // set when the journal could not be opened; every call returns it
	doneKeep   int   // DoneKeep; smaller in tests
	compactMin int64 // journalCompactMin; smaller in tests
	fl         *flock.Flock

	mu        sync.Mutex // guards the fields below
	f         *os.File
	size      int64
	compacted int64 // size after the last rewrite
	seq       uint64
	written   uint64 // sequence number of the last line written
	recs      map[string]*jrec
	done      map[string]time.Time
	doneOrder []string // done ids, oldest first
	closed    bool

	syncMu sync.Mutex // serialises fsyncs; guards synced
	synced uint64     // every line up to this sequence number is durable
}

type jrec struct {
	Record
	seq  uint64 // accept order
	wseq uint64 // line that made it known (for a duplicate's wait)
}

// journalLine is one line of the log.
type journalLine struct {
	Op  string    `json:"op"` // accept, consumed, attempt, done
	ID  string    `json:"id,omitempty"`
	At  time.Time `json:"at,omitzero"`
	Rec *Record   `json:"rec,omitempty"`
}

// Journal returns the durable ingress journal, opening it on first use. If
// it cannot be opened (for instance another process holds it), every method
// of the returned Journal reports why.
func (m *Manager) Journal() *Journal {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if m.journal == nil {
		m.journal = openJournal(filepath.Join(m.opts.StateDir, "ingress"), m.opts.Now, m.log.Named("journal"))
	}
	return m.journal
}

func openJournal(dir string, now func() time.Time, log *zap.Logger) *Journal {
	j := &Journal{path: filepath.Join(dir, "journal.jsonl"), log: log, now: now,
		recs: map[string]*jrec{}, done: map[string]time.Time{}, doneKeep: DoneKeep, compactMin: journalCompactMin}
	if err := j.open(dir); err != nil {
		j.openErr = fmt.Errorf("sessions: journal: %w", err)
		log.Error("ingress journal unavailable", zap.Error(err))
	}
	return j
}

func (j *Journal) open(dir string) error {
	if err := mkdirPrivate(dir); err != nil {
		return err
	}
	j.fl = flock.New(j.path+lockExt, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := j.fl.TryLock()
	if err != nil {
		return err
	}
	if !ok {
		li, _ := ReadLockInfo(j.path + lockExt)
		return fmt.Errorf("%s is held by pid %d on host %q", j.path+lockExt, li.PID, li.Host)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(LockInfo{PID: os.Getpid(), StartTime: processStart(), CreatedAt: time.Now().UTC(), Host: host})
	_ = os.WriteFile(j.path+lockExt, b, 0o600)
	if err := j.replay(); err != nil {
		_ = j.fl.Unlock()
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		_ = j.fl.Unlock()
		return err
	}
	j.f = f
	return nil
}

// replay rebuilds the state from the log. A torn last line (crash while
// appending) is cut off so the next append starts on a fresh line; other
// bad lines are skipped with a warning.
func (j *Journal) replay() error {
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var off, good int64
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		off += int64(len(line))
		if len(line) > 0 && line[len(line)-1] != '\n' {
			// No newline: the last write was torn (or the file was cut).
			j.log.Warn("torn last journal line ignored", zap.Int("line", lineNo), zap.Int("bytes", len(line)))
			break
		}
		if len(line) > 0 {
			if t := bytes.TrimSpace(line); len(t) > 0 {
				var l journalLine
				if uerr := json.Unmarshal(t, &l); uerr != nil {
					j.log.Warn("bad journal line skipped", zap.Int("line", lineNo), zap.Error(uerr))
				} else {
					j.applyLocked(l)
				}
			}
			good = off
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if fi, err := f.Stat(); err == nil && fi.Size() != good {
		if err := f.Truncate(good); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	j.size, j.compacted = good, good
	return nil
}

// applyLocked applies one log line to the in-memory state.
func (j *Journal) applyLocked(l journalLine) {
	switch l.Op {
	case "accept":
		if l.Rec == nil {
			return
		}
		if _, done := j.done[l.Rec.ID]; done {
			return
		}
		j.seq++
		j.recs[l.Rec.ID] = &jrec{Record: *l.Rec, seq: j.seq}
	case "consumed":
		if r, ok := j.recs[l.ID]; ok {
			r.Consumed = true
		}
	case "attempt":
		if r, ok := j.recs[l.ID]; ok {
			r.Attempts++
		}
	case "done":
		delete(j.recs, l.ID)
		j.rememberDoneLocked(l.ID, l.At)
	}
}

func (j *Journal) rememberDoneLocked(id string, at time.Time) {
	if _, ok := j.done[id]; !ok {
		j.doneOrder = append(j.doneOrder, id)
	}
	j.done[id] = at
	cutoff := j.now().Add(-DoneRetention)
	for len(j.doneOrder) > j.doneKeep {
		oldest := j.doneOrder[0]
		if j.done[oldest].After(cutoff) {
			break
		}
		delete(j.done, oldest)
		j.doneOrder = j.doneOrder[1:]
	}
}

// writeLocked appends one line and returns its sequence number.
func (j *Journal) writeLocked(l journalLine) (uint64, error) {
	if j.closed {
		return 0, fmt.Errorf("journal closed")
	}
	b, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	b = append(b, '\n')
	n, err := j.f.Write(b)
	j.size += int64(n)
	if err != nil {
		return 0, err
	}
	j.written++
	return j.written, nil
}

// syncTo returns once line seq is durable. Callers arriving while an fsync
// runs wait for it and then share the next one.
func (j *Journal) syncTo(seq uint64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= seq {
		return nil
	}
	j.mu.Lock()
	target, f := j.written, j.f
	j.mu.Unlock()
	if err := f.Sync(); err != nil {
		return err
	}
	j.synced = target
	return nil
}

// Accept journals rec durably. dup is true (and nothing is written) when the
// same id was accepted before (pending, or done within the retention).
func (j *Journal) Accept(ctx context.Context, rec Record) (dup bool, err error) {
	if j.openErr != nil {
		return false, j.openErr
	}
	if rec.ID == "" {
		return false, fmt.Errorf("sessions: journal accept: empty id")
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	j.mu.Lock()
	if r, ok := j.recs[rec.ID]; ok {
		w := r.wseq
		j.mu.Unlock()
		// The first Accept may still be syncing: a duplicate is only safe to
		// acknowledge once the original is durable.
		if err := j.syncTo(w); err != nil {
			return false, fmt.Errorf("sessions: journal accept: %w", err)
		}
		return true, nil
	}
	if _, ok := j.done[rec.ID]; ok {
		j.mu.Unlock()
		return true, nil
	}
	if rec.AcceptedAt.IsZero() {
		rec.AcceptedAt = j.now()
	}
	w, err := j.writeLocked(journalLine{Op: "accept", Rec: &rec})
	if err != nil {
		j.mu.Unlock()
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	j.seq++
	r := &jrec{Record: rec, seq: j.seq, wseq: w}
	j.recs[rec.ID] = r
	j.mu.Unlock()
	if err := j.syncTo(w); err != nil {
		j.mu.Lock()
		if j.recs[rec.ID] == r {
			delete(j.recs, rec.ID)
		}
		j.mu.Unlock()
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	return false, nil
}

// update writes op for a pending id after mutating its record.
func (j *Journal) update(op, id string, fn func(*jrec)) (int, error) {
	if j.openErr != nil {
		return 0, j.openErr
	}
	j.mu.Lock()
	r, ok := j.recs[id]
	if !ok {
		_, done := j.done[id]
		j.mu.Unlock()
		if done {
			return 0, nil
		}
		return 0, fmt.Errorf("sessions: journal %s %q: %w", op, clip(id), ErrNotFound)
	}
	l := journalLine{Op: op, ID: id}
	if op == "done" {
		l.At = j.now()
	}
	w, err := j.writeLocked(l)
	if err != nil {
		j.mu.Unlock()
		return 0, fmt.Errorf("sessions: journal %s: %w", op, err)
	}
	fn(r)
	if op == "done" {
		delete(j.recs, id)
		j.rememberDoneLocked(id, l.At)
	}
	attempts := r.Attempts
	j.mu.Unlock()
	if err := j.syncTo(w); err != nil {
		return 0, fmt.Errorf("sessions: journal %s: %w", op, err)
	}
	if op == "done" {
		j.maybeCompact()
	}
	return attempts, nil
}

// Consumed marks that the record's message is in the transcript.
func (j *Journal) Consumed(id string) error {
	_, err := j.update("consumed", id, func(r *jrec) { r.Consumed = true })
	return err
}

// Attempt counts one more attempt and returns the count.
func (j *Journal) Attempt(id string) (int, error) {
	return j.update("attempt", id, func(r *jrec) { r.Attempts++ })
}

// Done marks the record's turn complete (reply delivered or given up).
func (j *Journal) Done(id string) error {
	_, err := j.update("done", id, func(*jrec) {})
	return err
}

// Pending returns accepted records not yet Done, oldest first.
func (j *Journal) Pending() ([]Record, error) {
	if j.openErr != nil {
		return nil, j.openErr
	}
	j.mu.Lock()
	rs := make([]*jrec, 0, len(j.recs))
	for _, r := range j.recs {
		rs = append(rs, r)
	}
	j.mu.Unlock()
	slices.SortFunc(rs, func(a, b *jrec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = r.Record
	}
	return out, nil
}

// maybeCompact rewrites the log to the current state when it has grown:
// the pending records and the remembered done ids.
func (j *Journal) maybeCompact() {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	grown := j.size-j.compacted > j.compactMin
	if j.closed || !(grown && len(j.recs) == 0) && j.size < journalCompactMax {
		return
	}
	if err := j.compactLocked(); err != nil {
		j.log.Warn("journal compaction failed", zap.Error(err))
	}
}

func (j *Journal) compactLocked() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, id := range j.doneOrder {
		if err := enc.Encode(journalLine{Op: "done", ID: id, At: j.done[id]}); err != nil {
			return err
		}
	}
	rs := make([]*jrec, 0, len(j.recs))
	for _, r := range j.recs {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b *jrec) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range rs {
		rec := r.Record
		if err := enc.Encode(journalLine{Op: "accept", Rec: &rec}); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(j.path, buf.Bytes()); err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		j.closed = true // nothing can be appended safely any more
		return err
	}
	_ = j.f.Close()
	j.f = f
	j.size, j.compacted = int64(buf.Len()), int64(buf.Len())
	j.synced = j.written
	j.log.Debug("journal compacted", zap.Int("pending", len(rs)), zap.Int("done_ids", len(j.doneOrder)))
	return nil
}

func (j *Journal) close() error {
	if j.openErr != nil {
		return nil
	}
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed && j.f == nil {
		return nil
	}
	j.closed = true
	var err error
	if j.f != nil {
		err = errors.Join(j.f.Sync(), j.f.Close())
		j.f = nil
	}
	_ = os.Truncate(j.path+lockExt, 0)
	return errors.Join(err, j.fl.Unlock())
}
