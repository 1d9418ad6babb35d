package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Locker is the transcript write lock (S1's flock-based lock in the daemon).
type Locker interface {
	Lock(ctx context.Context) (unlock func(), err error)
}

// Transcript is one append-only JSONL file in pi-coding-agent's session
// format, version 3 (SPEC §3.4). It is safe for concurrent use. It keeps the
// parsed tail of the file and the rebuilt context in memory, extends them on
// Append, and re-reads only when another process changed the file. The
// write lock is held only while bytes are written, never across fsync or
// an LLM call.
type Transcript struct {
	path      string
	sessionID string
	hdr       Header
	lock      Locker // nil: read-only use (LoadFile, ReadHistory)
	log       *zap.Logger
	now       func() time.Time
	rand      func() uint32
	noSync    bool
	hint      int64 // compaction offset known from the index entry
	// onAppend sees each write's entries and the file's new end (the
	// search index); called after the locks are released.
	onAppend func(nodes []*Node, end int64)

	written atomic.Uint64 // sequence of the last completed write
	sync    syncGroup

	mu         sync.Mutex // guards the fields below
	st         *fileState // nil until first loaded
	prefixIDs  map[string]struct{}
	prefixLo   int64 // prefixIDs and prefixMsgs cover [headerEnd, prefixLo)
	prefixMsgs int
}

// TranscriptOption tunes openTranscript.
type TranscriptOption func(*Transcript)

// WithCompactionHint passes Entry.CompactionOffset so the first load starts
// at the latest compaction.
func WithCompactionHint(off int64) TranscriptOption {
	return func(t *Transcript) { t.hint = off }
}

// withoutSync skips fsync (tests, benchmarks of the non-durable path).
func withoutSync() TranscriptOption { return func(t *Transcript) { t.noSync = true } }

// withClock and withRand make written timestamps and ids deterministic.
func withClock(now func() time.Time) TranscriptOption { return func(t *Transcript) { t.now = now } }
func withRand(r func() uint32) TranscriptOption       { return func(t *Transcript) { t.rand = r } }

// WithAppendHook passes every successful write's entries to fn.
func WithAppendHook(fn func(nodes []*Node, end int64)) TranscriptOption {
	return func(t *Transcript) { t.onAppend = fn }
}

// OpenTranscript returns the transcript at path; it does no I/O. The header
// (session id, hdr) is written with the first append. lock guards writes
// across goroutines and processes; nil makes the transcript read-only.
func OpenTranscript(path, sessionID string, hdr Header, lock Locker, log *zap.Logger, opts ...TranscriptOption) (*Transcript, error) {
	if path == "" {
		return nil, errors.New("transcript: open: empty path")
	}
	if log == nil {
		log = zap.NewNop()
	}
	t := &Transcript{
		path: path, sessionID: sessionID, hdr: hdr, lock: lock,
		log: log.With(zap.String("session_id", sessionID)), now: time.Now, rand: rand.Uint32,
	}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// Path is the transcript file.
func (t *Transcript) Path() string { return t.path }

// stateLocked brings t.st up to date with the file f (nil: the file does
// not exist) and resolves the chain.
func (t *Transcript) stateLocked(f *os.File) (*fileState, error) {
	if f == nil {
		if t.st == nil || t.st.fi != nil {
			t.st = newFileState(nil)
			t.st.view = &chainView{}
			t.prefixIDs, t.prefixLo, t.prefixMsgs = nil, 0, 0
		}
		return t.st, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("transcript: stat: %w", err)
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

// openRead opens the file for reading; nil with no error if it is missing.
func (t *Transcript) openRead() (*os.File, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: open: %w", err)
	}
	return f, nil
}

// Context rebuilds what the model is sent (SPEC §3.4). The result has its
// own slices; its content blocks are shared with the cache and must not be
// modified. A missing file is an empty context.
func (t *Transcript) Context(ctx context.Context) (Context, error) {
	if err := ctx.Err(); err != nil {
		return Context{}, err
	}
	f, err := t.openRead()
	if err != nil {
		return Context{}, err
	}
	if f != nil {
		defer f.Close()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(f)
	if err != nil {
		return Context{}, err
	}
	if st.ctx == nil {
		c := buildContext(st.view, st.leaf)
		st.ctx = &c
	}
	return copyContext(st.ctx), nil
}

// History returns every message of the chain, compactions ignored (for the
// operator view and GET history). It reads the whole chain.
func (t *Transcript) History(ctx context.Context) ([]Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := t.openRead()
	if err != nil || f == nil {
		return nil, err
	}
	defer f.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(f)
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
func (t *Transcript) Stats(ctx context.Context) (messages int, lastCompactionOffset int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	f, err := t.openRead()
	if err != nil || f == nil {
		return 0, 0, err
	}
	defer f.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(f)
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
func (t *Transcript) scanPrefixLocked(f *os.File, st *fileState) error {
	msgs, ids, err := scanPrefix(f, st.headerEnd, st.lo)
	if err != nil {
		return err
	}
	t.prefixIDs, t.prefixLo, t.prefixMsgs = ids, st.lo, msgs
	return nil
}

// Append writes complete messages durably, as a chain continuing the
// current leaf, and returns their entry ids. A message without a timestamp
// gets the current time.
func (t *Transcript) Append(ctx context.Context, msgs ...Message) ([]string, error) {
	return t.appendMessages(ctx, true, msgs)
}

// AppendLazy is Append without waiting for the fsync: it returns once the
// lines reached the kernel, which survives the death of the process; the
// next Append (or any fsync of the file) makes them durable against power
// loss too. The runner uses it for a turn's inputs, which the ingress
// journal already holds durably, and which the turn's reply fsyncs.
func (t *Transcript) AppendLazy(ctx context.Context, msgs ...Message) ([]string, error) {
	return t.appendMessages(ctx, false, msgs)
}

func (t *Transcript) appendMessages(ctx context.Context, sync bool, msgs []Message) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	return t.append(ctx, sync, func(st *fileState, _ *os.File, buf *bytes.Buffer) ([]*Node, error) {
		nodes := make([]*Node, 0, len(msgs))
		parent := st.leaf
		now := t.now()
		for _, m := range msgs {
			id := t.newIDLocked(st, nodes)
			m, err := encodeMessageEntry(buf, id, parent, m, now)
			if err != nil {
				return nil, err
			}
			msg := m
			nodes = append(nodes, &Node{ID: id, Parent: parent, Kind: KindMessage, IsMessage: true, Msg: &msg})
			parent = id
		}
		return nodes, nil
	})
}

// AppendCompaction appends a compaction entry. FirstKeptEntryID must be an
// entry of the current chain ("" keeps nothing before the compaction).
func (t *Transcript) AppendCompaction(ctx context.Context, c Compaction) (string, error) {
	ids, err := t.append(ctx, true, func(st *fileState, f *os.File, buf *bytes.Buffer) ([]*Node, error) {
		if c.FirstKeptEntryID != "" {
			in, err := st.inChain(f, c.FirstKeptEntryID)
			if err != nil {
				return nil, fmt.Errorf("transcript: compaction: %w", err)
			}
			if !in {
				return nil, errNotInChain(c.FirstKeptEntryID)
			}
		}
		now := t.now()
		id := t.newIDLocked(st, nil)
		if err := encodeCompactionEntry(buf, id, st.leaf, c, now); err != nil {
			return nil, err
		}
		return []*Node{{ID: id, Parent: st.leaf, Kind: KindCompaction, Comp: &CompactionInfo{Compaction: c, At: now.UTC().Truncate(time.Millisecond)}}}, nil
	})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// newIDLocked returns 8 hex characters unused in the file and in pending.
func (t *Transcript) newIDLocked(st *fileState, pending []*Node) string {
	for {
		id := NewEntryID(t.rand())
		if _, ok := st.nodes[id]; ok {
			continue
		}
		if _, ok := t.prefixIDs[id]; ok {
			continue
		}
		dup := false
		for _, n := range pending {
			dup = dup || n.ID == id
		}
		if !dup && id != t.sessionID {
			return id
		}
	}
}

// append runs one locked write: it brings the state up to date, cuts a torn
// tail, writes the header when the file has none, then the lines enc
// produces, and records the new entries. fsync happens after the lock is
// released, grouped with concurrent appends.
func (t *Transcript) append(ctx context.Context, sync bool, enc func(*fileState, *os.File, *bytes.Buffer) ([]*Node, error)) ([]string, error) {
	if t.lock == nil {
		return nil, errors.New("transcript: append: opened read-only")
	}
	unlock, err := t.lock.Lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("transcript: append: %w", err)
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if err := ctx.Err(); err != nil {
		// Cancelled while waiting for the lock: a cancelled turn writes nothing.
		return nil, fmt.Errorf("transcript: append: %w", err)
	}
	f, err := os.OpenFile(t.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("transcript: append: %w", err)
	}
	defer f.Close()

	t.mu.Lock()
	seq, nodes, err := t.writeLocked(f, enc)
	var end int64
	if err == nil && t.st != nil {
		end = t.st.end
	}
	t.mu.Unlock()
	unlock()
	locked = false
	if err != nil {
		return nil, err
	}
	if t.onAppend != nil {
		t.onAppend(nodes, end)
	}
	if sync && !t.noSync {
		if err := t.sync.wait(f, seq, t.written.Load); err != nil {
			return nil, fmt.Errorf("transcript: append: fsync: %w", err)
		}
	}
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	return ids, nil
}

func (t *Transcript) writeLocked(f *os.File, enc func(*fileState, *os.File, *bytes.Buffer) ([]*Node, error)) (uint64, []*Node, error) {
	st, err := t.stateLocked(f)
	if err != nil {
		return 0, nil, err
	}
	if st.lo > st.headerEnd && t.prefixIDs == nil {
		if err := t.scanPrefixLocked(f, st); err != nil {
			return 0, nil, err
		}
	}
	var buf bytes.Buffer
	writeHeader := st.hdr == nil
	if writeHeader {
		if err := encodeHeader(&buf, t.sessionID, t.hdr, t.now()); err != nil {
			return 0, nil, err
		}
	} else if st.needNL {
		buf.WriteByte('\n')
	}
	headerLen := int64(buf.Len())
	nodes, err := enc(st, f, &buf)
	if err != nil {
		return 0, nil, err
	}
	at := st.end
	if writeHeader {
		at = 0
	}
	if st.tornAt >= 0 || writeHeader {
		if err := f.Truncate(at); err != nil {
			return 0, nil, fmt.Errorf("transcript: append: cut torn line: %w", err)
		}
		if st.tornAt >= 0 {
			t.log.Warn("transcript: cut torn last line", zap.Int64("offset", st.tornAt))
		}
	}
	if _, err := f.WriteAt(buf.Bytes(), at); err != nil {
		t.st = nil // re-read: the tail may hold a partial line now
		_ = f.Truncate(at)
		return 0, nil, fmt.Errorf("transcript: append: %w", err)
	}
	seq := t.written.Add(1)
	fi, err := f.Stat()
	if err != nil {
		t.st = nil
		return 0, nil, fmt.Errorf("transcript: append: stat: %w", err)
	}

	if writeHeader {
		st.hdr = &SessionLine{ID: t.sessionID, version: TranscriptVersion, Header: t.hdr}
		st.headerEnd, st.lo = headerLen, headerLen
		t.prefixIDs, t.prefixLo, t.prefixMsgs = map[string]struct{}{}, headerLen, 0
	}
	off := at + headerLen
	lines := bytes.SplitAfter(buf.Bytes()[headerLen:], []byte{'\n'})
	for i, n := range nodes {
		n.Off = off
		off += int64(len(lines[i]))
		st.add(n)
	}
	st.fi, st.end, st.tornAt, st.needNL = fi, at+int64(buf.Len()), -1, false
	t.extendViewLocked(st, nodes)
	return seq, nodes, nil
}

// extendViewLocked updates the cached chain after an append: messages
// extend it; a compaction re-resolves it (on the next read).
func (t *Transcript) extendViewLocked(st *fileState, nodes []*Node) {
	for _, n := range nodes {
		if n.Kind == KindCompaction {
			st.view, st.ctx = nil, nil
			return
		}
	}
	if st.view == nil {
		st.ctx = nil
		return
	}
	if st.ctx != nil && !extendContext(st.ctx, nodes) {
		st.ctx = nil
	}
	for _, n := range nodes {
		if n.Kind == KindMessage {
			st.view.entries = append(st.view.entries, n)
		}
	}
}

// syncGroup coalesces fsyncs: an appender whose write is already covered
// by a finished fsync returns at once; one running fsync serves every write
// completed before it started.
type syncGroup struct {
	mu       sync.Mutex    // guards the fields below
	durable  uint64        // highest write sequence known to be on disk
	inflight chan struct{} // closed when the running fsync ends; nil if none
}

func (g *syncGroup) wait(f *os.File, seq uint64, written func() uint64) error {
	for {
		g.mu.Lock()
		if g.durable >= seq {
			g.mu.Unlock()
			return nil
		}
		if ch := g.inflight; ch != nil {
			g.mu.Unlock()
			<-ch
			continue
		}
		ch := make(chan struct{})
		g.inflight = ch
		target := written()
		g.mu.Unlock()

		err := f.Sync()

		g.mu.Lock()
		g.inflight = nil
		if err == nil && target > g.durable {
			g.durable = target
		}
		g.mu.Unlock()
		close(ch)
		if err != nil {
			return err
		}
	}
}

// Records reports which of ids were appended as user messages and whether
// the turn that took them finished with an assistant reply (SPEC §3.7,
// recovery). It looks at the current chain's last recordsLookback entries.
func (t *Transcript) Records(ctx context.Context, ids []string) (RecordsState, error) {
	rs := RecordsState{Consumed: map[string]bool{}}
	if err := ctx.Err(); err != nil {
		return rs, err
	}
	f, err := t.openRead()
	if err != nil || f == nil {
		return rs, err
	}
	defer f.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stateLocked(f)
	if err != nil {
		return rs, fmt.Errorf("transcript: records: %w", err)
	}
	return recordsOf(st.nodes, st.leaf, ids), nil
}

// LoadFile rebuilds the context of the transcript at path without locking
// or writing anything (doctor, CLI). A torn last line is ignored with a
// warning; any other bad line is an error naming its line number.
func LoadFile(path string, log *zap.Logger) (Context, error) {
	if _, err := os.Stat(path); err != nil {
		return Context{}, fmt.Errorf("transcript: load: %w", err)
	}
	t, err := OpenTranscript(path, "", Header{}, nil, log)
	if err != nil {
		return Context{}, err
	}
	return t.Context(context.Background())
}

// ReadHistory returns every message of the transcript's chain at path,
// compactions ignored, without locking or writing anything.
func ReadHistory(path string) ([]Message, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("transcript: history: %w", err)
	}
	t, err := OpenTranscript(path, "", Header{}, nil, nil)
	if err != nil {
		return nil, err
	}
	return t.History(context.Background())
}
