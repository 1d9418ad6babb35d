package filestore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gofrs/flock"
	"go.uber.org/zap"
)

const (
	// journalCompactMin is how much the log must have grown since its last
	// rewrite before a fully drained journal is rewritten; journalCompactMax
	// forces a rewrite even with records pending. Either waits, too, until
	// the log grew by as much as the last rewrite wrote (compactDueLocked).
	journalCompactMin = 256 << 10
	journalCompactMax = 32 << 20
)

// Journal is the durable ingress journal and reply outbox (SPEC §3.7): an
// append-only JSONL log in <stateDir>/ingress/journal.jsonl. It also keeps
// the streaming drafts that are on screen (Draft), so a start after a crash
// can clear them.
//
// Accept returns after its line is fsynced (concurrent callers share one
// fsync). Every other mark returns once its line reached the kernel, which
// survives the death of the process; a background loop fsyncs it shortly
// after. A write that fails is cut back to the last whole line; a mark that
// cannot be written is kept in memory (its record stays in flight, never
// run twice) and retried every second, and Health reports the failure
// until the log accepts writes again. One process holds the journal (a
// flock on journal.jsonl.lock) while it is open.
//
// It is safe for concurrent use.
type Journal struct {
	path       string
	log        *zap.Logger
	now        func() time.Time
	openErr    error // set when the journal could not be opened; every call returns it
	doneKeep   int   // DoneKeep; smaller in tests
	compactMin int64 // journalCompactMin; smaller in tests
	compactMax int64 // journalCompactMax; smaller in tests
	fl         *flock.Flock
	// openFile opens the log for appending; tests inject faults with it.
	openFile func(path string) (journalFile, error)
	stop     chan struct{}
	loopDone chan struct{}
	// compactWake asks the loop for a rewrite (maybeCompact).
	compactWake chan struct{}

	mu        sync.Mutex // guards the fields below
	f         journalFile
	size      int64 // bytes of whole lines in the file
	compacted int64 // size after the last rewrite
	seq       uint64
	written   uint64 // sequence number of the last line written
	recs      map[string]*jrec
	replies   map[string]*jreply
	drafts    map[string]*jdraft // made on first use
	done      *doneIDs           // finished ids remembered for duplicates
	backlog   [][]byte           // marks not yet written, in order
	lineBuf   []byte             // encoding buffer reused by writeLocked
	fault     error              // the last write failure; nil when healthy
	closed    bool
	// rewriting is set while a rewrite runs beside the writes
	// (rewriteOnline); tail holds the lines written meanwhile.
	rewriting bool
	tail      []byte
	// rewrites counts the log's rewrites, rewrote the bytes they wrote and
	// grew the bytes appended before each (tests: what compaction costs
	// against what it saves).
	rewrites      int
	rewrote, grew int64
	// rewriteHook, when set, runs between a rewrite's write and its
	// install (tests).
	rewriteHook func()

	syncMu sync.Mutex // serialises fsyncs; guards synced, lost, lostErr
	synced uint64     // every line up to this sequence number is durable
	// lost is the last line a failed fsync covered (0: none since the log
	// was last rewritten), lostErr that failure. The kernel reports a lost
	// write-back once and the next fsync succeeds without those lines, so
	// they stay failed until recover rewrites the log from memory.
	lost    uint64
	lostErr error

	lines, fsyncs, failures atomic.Int64
}

// JournalFile is the part of *os.File the journal appends through
// (Options.JournalOpen injects storage faults in tests).
type JournalFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}

type journalFile = JournalFile

type jrec struct {
	sessions.Record
	seq   uint64 // accept order
	wseq  uint64 // line that made it known (for a duplicate's wait)
	reply string // outstanding reply that answers it
	fresh bool   // accepted by this process (not left from an earlier one)
}

type jreply struct {
	sessions.Reply
	seq uint64
}

// journalLine is one line of the log.
type journalLine struct {
	Op    string           `json:"op"` // accept, start, fail, abort, ready, sent, done, draft, undraft
	ID    string           `json:"id,omitempty"`
	IDs   []string         `json:"ids,omitempty"`
	N     int              `json:"n,omitempty"`
	At    time.Time        `json:"at,omitzero"`
	Rec   *sessions.Record `json:"rec,omitempty"`
	Reply *sessions.Reply  `json:"reply,omitempty"`
	Draft *sessions.Draft  `json:"draft,omitempty"`
}

// Journal returns the durable ingress journal, opening it on first use. If
// it cannot be opened (for instance another process holds it), every method
// of the returned Journal reports why.
func (m *Manager) Journal() *Journal {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if m.journal == nil {
		m.journal = openJournalWith(filepath.Join(m.opts.StateDir, "ingress"), m.opts.Now, m.log.Named("journal"), m.opts.JournalOpen)
	}
	return m.journal
}

func openJournal(dir string, now func() time.Time, log *zap.Logger) *Journal {
	return openJournalWith(dir, now, log, nil)
}

func openJournalWith(dir string, now func() time.Time, log *zap.Logger, open func(string) (journalFile, error)) *Journal {
	if open == nil {
		open = func(p string) (journalFile, error) {
			return os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		}
	}
	j := &Journal{path: filepath.Join(dir, "journal.jsonl"), log: log, now: now, openFile: open,
		recs: map[string]*jrec{}, replies: map[string]*jreply{}, done: newDoneIDs(),
		doneKeep: sessions.DoneKeep, compactMin: journalCompactMin, compactMax: journalCompactMax}
	if err := j.open(dir); err != nil {
		j.openErr = fmt.Errorf("sessions: journal: %w", err)
		log.Error("ingress journal unavailable", zap.Error(err))
		return j
	}
	j.stop, j.loopDone, j.compactWake = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	go j.loop()
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
	f, err := j.openFile(j.path)
	if err != nil {
		_ = j.fl.Unlock()
		return err
	}
	j.f = f
	_ = os.Remove(j.path + rewriteExt) // a rewrite a crash cut short
	// A log that grew under steady traffic (never drained) is rewritten to
	// its state now, so each start replays only what is still live — unless
	// the rewrite would hold nearly as much (a day of done ids): a start
	// then costs no write that grows with them.
	if j.size > j.compactMin {
		if err := j.compactAtStartLocked(); err != nil {
			j.log.Warn("journal compaction at start failed", zap.Error(err))
			if j.closed {
				_ = j.fl.Unlock()
				return err
			}
		}
	}
	return nil
}

// replay rebuilds the state from the log. A torn last line (crash while
// appending) is cut off so the next append starts on a fresh line; other
// bad lines are skipped with a warning (the writer cuts failed writes back,
// so only outside damage produces them).
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
				if l, ok := parseDoneLine(t); ok {
					j.applyLocked(l)
				} else if l, uerr := decodeJournalLine(t); uerr != nil {
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
	ids := l.IDs
	if l.ID != "" && l.Op != "sent" {
		ids = append(ids, l.ID) // single-id lines of earlier releases
	}
	switch l.Op {
	case "accept":
		if l.Rec == nil {
			return
		}
		if j.done.has(l.Rec.ID) {
			return
		}
		j.seq++
		j.recs[l.Rec.ID] = &jrec{Record: *l.Rec, seq: j.seq}
	case "start", "attempt":
		j.eachRec(ids, func(r *jrec) { r.Starts++ })
	case "fail":
		j.eachRec(ids, func(r *jrec) { r.Failures++ })
	case "abort":
		j.eachRec(ids, func(r *jrec) { r.Starts = max(r.Starts-1, 0) })
	case "consumed":
		j.eachRec(ids, func(r *jrec) { r.Consumed = true })
	case "draft", "undraft":
		j.applyDraftLocked(l)
	case "ready":
		if l.Reply == nil || l.Reply.ID == "" {
			return
		}
		j.applyDraftLocked(l)
		j.seq++
		rp := &jreply{Reply: *l.Reply, seq: j.seq}
		j.replies[rp.ID] = rp
		j.eachRec(rp.Records, func(r *jrec) { r.reply = rp.ID })
		if rp.Sent >= len(rp.Chunks) {
			j.completeLocked(rp, l.At)
		}
	case "sent":
		rp, ok := j.replies[l.ID]
		if !ok {
			return
		}
		rp.Sent = max(rp.Sent, l.N)
		if rp.Sent >= len(rp.Chunks) {
			j.completeLocked(rp, l.At)
		}
	case "done":
		at := l.At
		if at.IsZero() {
			at = j.now()
		}
		for _, id := range ids {
			delete(j.recs, id)
			j.rememberDoneLocked(id, at)
		}
	}
}

func (j *Journal) eachRec(ids []string, fn func(*jrec)) {
	for _, id := range ids {
		if r, ok := j.recs[id]; ok {
			fn(r)
		}
	}
}

// completeLocked retires a fully delivered reply and finishes its records.
func (j *Journal) completeLocked(rp *jreply, at time.Time) {
	if at.IsZero() {
		at = j.now()
	}
	delete(j.replies, rp.ID)
	for _, id := range rp.Records {
		if r, ok := j.recs[id]; ok && r.reply == rp.ID {
			delete(j.recs, id)
			j.rememberDoneLocked(id, at)
		}
	}
}

// rememberDoneLocked remembers id, done at at, and forgets the oldest ids
// past the retention (or done at a time the clock has not reached yet:
// doneClockAhead) beyond the last doneKeep.
func (j *Journal) rememberDoneLocked(id string, at time.Time) {
	j.done.add(id, at)
	if j.done.len() > j.doneKeep {
		now := j.now()
		j.done.forget(j.doneKeep, now.Add(-sessions.DoneRetention), now.Add(doneClockAhead))
	}
}

// doneClockAhead is how far after the clock's now a done id's time may be
// and still be believed (doneIDs.forget): a clock's small steps back.
const doneClockAhead = time.Hour

var _ sessions.Delivery = (*Journal)(nil)
