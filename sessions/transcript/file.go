package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// Locker is the transcript write lock (S1's flock-based lock in the daemon).
type Locker interface {
	Lock(ctx context.Context) (unlock func(), err error)
}

// File is one append-only JSONL transcript in pi-coding-agent's session
// format, version 3 (SPEC §3.4). It is safe for concurrent use. It keeps the
// parsed tail of the file and the rebuilt context in memory, extends them on
// Append, and re-reads only when another process changed the file. The
// write lock is held only while bytes are written, never across fsync or
// an LLM call.
type File struct {
	path      string
	sessionID string
	hdr       Header
	lock      Locker // nil: read-only use (LoadFile, ReadHistory)
	log       *zap.Logger
	now       func() time.Time
	rand      func() uint32
	noSync    bool
	open      opener  // os files; in memory in the fuzz test
	stat      statter // os.Stat; in memory in the fuzz test
	hint      int64   // compaction offset known from the index entry
	// onAppend sees each write's entries and the file's new end (the
	// search index); called after the locks are released.
	onAppend func(nodes []*Node, end int64)

	written atomic.Uint64 // sequence of the last completed write
	sync    syncGroup

	hmu    sync.Mutex // guards cur, closed and the refs of open files (keep.go)
	cur    *openFile  // the file kept open between operations; nil if none
	closed bool       // Close was called: keep nothing open

	mu         sync.Mutex // guards the fields below
	st         *fileState // nil until first loaded
	prefixIDs  map[string]struct{}
	prefixLo   int64 // prefixIDs and prefixMsgs cover [headerEnd, prefixLo)
	prefixMsgs int
	wbuf       bytes.Buffer // write buffer reused by appends
}

// The files backend hands a File out as its TranscriptLog.
var _ sessions.TranscriptLog = (*File)(nil)

// Option tunes Open.
type Option func(*File)

// WithCompactionHint passes Entry.CompactionOffset so the first load starts
// at the latest compaction.
func WithCompactionHint(off int64) Option {
	return func(t *File) { t.hint = off }
}

// withoutSync skips fsync (tests, benchmarks of the non-durable path).
func withoutSync() Option { return func(t *File) { t.noSync = true } }

// withClock and withRand make written timestamps and ids deterministic.
func withClock(now func() time.Time) Option { return func(t *File) { t.now = now } }

func withRand(r func() uint32) Option { return func(t *File) { t.rand = r } }

// WithAppendHook passes every successful write's entries to fn.
func WithAppendHook(fn func(nodes []*Node, end int64)) Option {
	return func(t *File) { t.onAppend = fn }
}

// Open returns the transcript at path; it does no I/O. The header
// (session id, hdr) is written with the first append. lock guards writes
// across goroutines and processes; nil makes the transcript read-only.
func Open(path, sessionID string, hdr Header, lock Locker, log *zap.Logger, opts ...Option) (*File, error) {
	if path == "" {
		return nil, errors.New("transcript: open: empty path")
	}
	if log == nil {
		log = zap.NewNop()
	}
	t := &File{
		path: path, sessionID: sessionID, hdr: hdr, lock: lock,
		log: log.With(zap.String("session_id", sessionID)), now: time.Now, rand: rand.Uint32, open: openOS, stat: os.Stat,
	}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// Path is the transcript file.
func (t *File) Path() string { return t.path }

// stateLocked brings t.st up to date with the file f (nil: the file does
// not exist) and resolves the chain. fi is f's FileInfo when the caller
// knows it (nil: f is stat'ed); one that shows a change is checked against
// f again, as it may predate an append that completed meanwhile.
func (t *File) stateLocked(f handle, fi os.FileInfo) (*fileState, error) {
	if f == nil {
		if t.st == nil || t.st.fi != nil {
			t.st = newFileState(nil)
			t.st.view = &chainView{}
			t.prefixIDs, t.prefixLo, t.prefixMsgs = nil, 0, 0
		}
		return t.st, nil
	}
	if fi == nil || t.st == nil || !t.st.same(fi) {
		var err error
		if fi, err = f.Stat(); err != nil {
			return nil, fmt.Errorf("transcript: stat: %w", err)
		}
	}
	if t.st != nil && t.st.same(fi) {
		err := t.st.ensureView(f)
		if err == nil {
			return t.st, nil
		}
		if !errors.Is(err, errFallback) {
			return nil, err
		}
	} else {
		hint := t.hint
		if t.st != nil && t.st.view != nil && t.st.view.comp != nil {
			hint = t.st.view.comp.Off
		}
		t.prefixIDs, t.prefixLo, t.prefixMsgs = nil, 0, 0
		st, err := loadTail(f, fi, hint, t.log)
		if err == nil {
			t.st = st
			return st, nil
		}
		if !errors.Is(err, errFallback) {
			t.st = nil
			return nil, fmt.Errorf("transcript: load %s: %w", t.path, err)
		}
	}
	st, err := loadForward(f, fi, t.log)
	if err != nil {
		t.st = nil
		return nil, fmt.Errorf("transcript: load %s: %w", t.path, err)
	}
	t.st = st
	return st, nil
}

// openRead opens the file for reading: nil with no error if it is
// missing. Pass the result to t.release.
func (t *File) openRead() (*openFile, os.FileInfo, error) {
	of, fi, err := t.acquire(false)
	if err != nil {
		return nil, nil, fmt.Errorf("transcript: open: %w", err)
	}
	return of, fi, nil
}

// handleOf is of's handle, nil for a missing file.
func handleOf(of *openFile) handle {
	if of == nil {
		return nil
	}
	return of.h
}

// Context rebuilds what the model is sent (SPEC §3.4). The result shares
// its slices and content blocks with the cache: appending to its slices is
// fine (they are cut to their length), changing an element is not. Later
// appends to the transcript never change what it holds. A missing file is
// an empty context.
func (t *File) Context(ctx context.Context) (sessions.Context, error) {
	if err := ctx.Err(); err != nil {
		return sessions.Context{}, err
	}
	of, fi, err := t.openRead()
	if err != nil {
		return sessions.Context{}, err
	}
	defer t.release(of)
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(handleOf(of), fi)
	if err != nil {
		return sessions.Context{}, err
	}
	return t.contextLocked(st), nil
}

// contextLocked is st's context, built if needed, handed out without a
// copy (shareContext).
func (t *File) contextLocked(st *fileState) sessions.Context {
	if st.ctx == nil {
		c := buildContext(st.view, st.leaf)
		st.ctx = &c
	}
	st.ctxShared = true
	return shareContext(st.ctx)
}

// History returns every message of the chain, compactions ignored (for the
// operator view and GET history). It reads the whole chain.
func (t *File) History(ctx context.Context) ([]sessions.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	of, fi, err := t.openRead()
	if err != nil || of == nil {
		return nil, err
	}
	defer t.release(of)
	f := of.h
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(f, fi)
	if err != nil {
		return nil, err
	}
	if err := st.loadAll(f); err != nil {
		if !errors.Is(err, errFallback) {
			return nil, err
		}
		t.st = nil
		if st, err = loadForward(f, st.fi, t.log); err != nil {
			return nil, fmt.Errorf("transcript: load %s: %w", t.path, err)
		}
		t.st = st
	}
	return st.history(), nil
}

// Stats reports the number of message entries in the file and the byte
// offset of the latest compaction in the chain (0 if none), for the index
// entry (messageCount, compactionOffset). It reads the part of the file
// not loaded yet without decoding messages.
func (t *File) Stats(ctx context.Context) (messages int, lastCompactionOffset int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	of, fi, err := t.openRead()
	if err != nil || of == nil {
		return 0, 0, err
	}
	defer t.release(of)
	f := of.h
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(f, fi)
	if err != nil {
		return 0, 0, err
	}
	if t.prefixIDs == nil || t.prefixLo != st.lo {
		if err := t.scanPrefixLocked(f, st); err != nil {
			return 0, 0, err
		}
	}
	if st.view.comp != nil {
		lastCompactionOffset = st.view.comp.Off
	}
	return st.msgs + t.prefixMsgs, lastCompactionOffset, nil
}

// scanPrefixLocked makes prefixIDs and prefixMsgs cover what precedes
// st.lo. Once scanned, prefixIDs stays a valid superset as lo moves back.
func (t *File) scanPrefixLocked(f handle, st *fileState) error {
	msgs, ids, err := scanPrefix(f, st.headerEnd, st.lo)
	if err != nil {
		return err
	}
	t.prefixIDs, t.prefixLo, t.prefixMsgs = ids, st.lo, msgs
	return nil
}

// Records reports which of ids were appended as user messages and whether
// the turn that took them finished with an assistant reply (SPEC §3.7,
// recovery). It looks at the current chain's last RecordsLookback entries.
func (t *File) Records(ctx context.Context, ids []string) (sessions.RecordsState, error) {
	rs := sessions.RecordsState{Consumed: map[string]bool{}}
	if err := ctx.Err(); err != nil {
		return rs, err
	}
	of, fi, err := t.openRead()
	if err != nil || of == nil {
		return rs, err
	}
	defer t.release(of)
	f := of.h
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(f, fi)
	if err != nil {
		return rs, fmt.Errorf("transcript: records: %w", err)
	}
	return recordsOf(st.nodes, st.leaf, ids), nil
}

// LoadFile rebuilds the context of the transcript at path without locking
// or writing anything (doctor, CLI). A torn last line is ignored with a
// warning; any other bad line is an error naming its line number.
func LoadFile(path string, log *zap.Logger) (sessions.Context, error) {
	if _, err := os.Stat(path); err != nil {
		return sessions.Context{}, fmt.Errorf("transcript: load: %w", err)
	}
	t, err := Open(path, "", Header{}, nil, log)
	if err != nil {
		return sessions.Context{}, err
	}
	return t.Context(context.Background())
}

// ReadHistory returns every message of the transcript's chain at path,
// compactions ignored, without locking or writing anything.
func ReadHistory(path string) ([]sessions.Message, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("transcript: history: %w", err)
	}
	t, err := Open(path, "", Header{}, nil, nil)
	if err != nil {
		return nil, err
	}
	return t.History(context.Background())
}
