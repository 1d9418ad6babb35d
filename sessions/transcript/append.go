package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// Append writes complete messages durably, as a chain continuing the
// current leaf, and returns their entry ids. A message without a timestamp
// gets the current time.
func (t *File) Append(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	return t.appendMessages(ctx, true, msgs)
}

// AppendLazy is Append without waiting for the fsync: it returns once the
// lines reached the kernel, which survives the death of the process; the
// next Append (or any fsync of the file) makes them durable against power
// loss too. The runner uses it for a turn's inputs, which the ingress
// journal already holds durably, and which the turn's reply fsyncs.
func (t *File) AppendLazy(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	return t.appendMessages(ctx, false, msgs)
}

// AppendLazyContext is AppendLazy followed by Context, in one step: the
// context the append leaves is taken while the append still holds the
// file's state, so it costs no second look at the file. The runner uses it
// for the inputs it appends right before a model call.
func (t *File) AppendLazyContext(ctx context.Context, msgs ...sessions.Message) ([]string, sessions.Context, error) {
	var c sessions.Context
	got := false
	ids, err := t.appendMessagesContext(ctx, false, msgs, func(st *fileState) {
		if st.view != nil {
			c, got = t.contextLocked(st), true
		}
	})
	if err != nil {
		return nil, sessions.Context{}, err
	}
	if !got {
		if c, err = t.Context(ctx); err != nil {
			return nil, sessions.Context{}, err
		}
	}
	return ids, c, nil
}

func (t *File) appendMessages(ctx context.Context, sync bool, msgs []sessions.Message) ([]string, error) {
	return t.appendMessagesContext(ctx, sync, msgs, nil)
}

// appendMessagesContext appends msgs; after (nil: no) sees the state the
// write left, under the File's lock.
func (t *File) appendMessagesContext(ctx context.Context, sync bool, msgs []sessions.Message, after func(*fileState)) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	return t.append(ctx, sync, after, func(st *fileState, _ handle, buf *bytes.Buffer) ([]*Node, error) {
		nodes := make([]*Node, 0, len(msgs))
		parent := st.leaf
		now := t.now()
		for _, m := range msgs {
			id := t.newIDLocked(st, nodes)
			line, m, err := appendMessageEntry(buf.AvailableBuffer(), id, parent, m, now)
			if err != nil {
				return nil, err
			}
			msg := m
			if !MessageRoundTrips(&msg) {
				// The line does not decode back to m (a custom role,
				// invalid UTF-8, ...): keep what a reload would read.
				n, err := ParseEntry(line, 0)
				if err != nil {
					return nil, fmt.Errorf("transcript: append: the entry written does not read back: %w", err)
				}
				if n == nil || n.Msg == nil {
					return nil, errors.New("transcript: append: the entry written reads back as no message")
				}
				msg = *n.Msg
			}
			buf.Write(line)
			nodes = append(nodes, &Node{ID: id, Parent: parent, Kind: KindMessage, IsMessage: true, Msg: &msg})
			parent = id
		}
		return nodes, nil
	})
}

// AppendCompaction appends a compaction entry. FirstKeptEntryID must be an
// entry of the current chain ("" keeps nothing before the compaction).
func (t *File) AppendCompaction(ctx context.Context, c sessions.Compaction) (string, error) {
	ids, err := t.append(ctx, true, nil, func(st *fileState, f handle, buf *bytes.Buffer) ([]*Node, error) {
		if c.FirstKeptEntryID != "" {
			in, err := st.inChain(f, c.FirstKeptEntryID)
			if err != nil {
				return nil, fmt.Errorf("transcript: compaction: %w", err)
			}
			if !in {
				return nil, ErrFirstKeptNotInChain(c.FirstKeptEntryID)
			}
		}
		now := t.now()
		id := t.newIDLocked(st, nil)
		buf.Write(appendCompactionLine(buf.AvailableBuffer(), id, st.leaf, &c, now))
		return []*Node{{ID: id, Parent: st.leaf, Kind: KindCompaction, Comp: &CompactionInfo{Compaction: c, At: now.UTC().Truncate(time.Millisecond)}}}, nil
	})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// newIDLocked returns 8 hex characters unused in the file and in pending.
func (t *File) newIDLocked(st *fileState, pending []*Node) string {
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
// released, grouped with concurrent appends. after (if not nil) sees the
// state the write left, under t.mu.
func (t *File) append(ctx context.Context, sync bool, after func(*fileState), enc func(*fileState, handle, *bytes.Buffer) ([]*Node, error)) ([]string, error) {
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
	of, fi, err := t.acquire(true)
	if err != nil {
		return nil, fmt.Errorf("transcript: append: %w", err)
	}
	defer t.release(of)
	f := of.h

	t.mu.Lock()
	seq, nodes, err := t.writeLocked(f, fi, enc)
	var end int64
	if err == nil && t.st != nil {
		end = t.st.end
		if after != nil {
			after(t.st)
		}
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

func (t *File) writeLocked(f handle, fi os.FileInfo, enc func(*fileState, handle, *bytes.Buffer) ([]*Node, error)) (uint64, []*Node, error) {
	st, err := t.stateLocked(f, fi)
	if err != nil {
		return 0, nil, err
	}
	if st.lo > st.headerEnd && t.prefixIDs == nil {
		if err := t.scanPrefixLocked(f, st); err != nil {
			return 0, nil, err
		}
	}
	buf := &t.wbuf
	buf.Reset()
	defer func() {
		// Keep the buffer for the next append unless one huge message grew it.
		if buf.Cap() > maxKeptWriteBuf {
			t.wbuf = bytes.Buffer{}
		}
	}()
	writeHeader := st.hdr == nil
	if writeHeader {
		line, err := EncodeHeader(t.sessionID, t.hdr, t.now())
		if err != nil {
			return 0, nil, err
		}
		writeLine(buf, line)
	} else if st.needNL {
		buf.WriteByte('\n')
	}
	headerLen := int64(buf.Len())
	nodes, err := enc(st, f, buf)
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
	fi, err = f.Stat()
	if err != nil {
		t.st = nil
		return 0, nil, fmt.Errorf("transcript: append: stat: %w", err)
	}

	if writeHeader {
		st.hdr = &SessionLine{ID: t.sessionID, Header: t.hdr}
		st.headerEnd, st.lo = headerLen, headerLen
		t.prefixIDs, t.prefixLo, t.prefixMsgs = map[string]struct{}{}, headerLen, 0
	}
	off := at + headerLen
	rest := buf.Bytes()[headerLen:]
	for _, n := range nodes {
		n.Off = off
		ln := bytes.IndexByte(rest, '\n') + 1
		off += int64(ln)
		rest = rest[ln:]
		st.add(n)
	}
	st.fi, st.end, st.tornAt, st.needNL = fi, at+int64(buf.Len()), -1, false
	st.extendView(nodes)
	return seq, nodes, nil
}

// syncGroup coalesces fsyncs: an appender whose write is already covered
// by a finished fsync returns at once; one running fsync serves every write
// completed before it started. A failed fsync fails every write it
// covered, also the writes of those who waited for it: the kernel reports
// a lost write-back once, so a second fsync would succeed without those
// bytes being on disk.
type syncGroup struct {
	mu       sync.Mutex // guards the fields below
	durable  uint64     // highest write sequence known to be on disk
	failed   uint64     // highest write sequence a failed fsync covered
	ferr     error      // that fsync's error
	inflight *syncCall  // the running fsync; nil if none
}

// syncCall is one fsync: done is closed when it ended with err, having
// covered the writes up to target.
type syncCall struct {
	done   chan struct{}
	target uint64
	err    error
}

func (g *syncGroup) wait(f handle, seq uint64, written func() uint64) error {
	for {
		g.mu.Lock()
		if seq <= g.failed {
			// Also when a later fsync succeeded: it does not bring back
			// what the failed one lost.
			err := g.ferr
			g.mu.Unlock()
			return err
		}
		if g.durable >= seq {
			g.mu.Unlock()
			return nil
		}
		if c := g.inflight; c != nil {
			g.mu.Unlock()
			<-c.done
			if c.target >= seq {
				return c.err
			}
			continue
		}
		c := &syncCall{done: make(chan struct{}), target: written()}
		g.inflight = c
		g.mu.Unlock()

		c.err = f.Sync()

		g.mu.Lock()
		g.inflight = nil
		switch {
		case c.err != nil && c.target > g.failed:
			g.failed, g.ferr = c.target, c.err
		case c.err == nil && c.target > g.durable:
			g.durable = c.target
		}
		g.mu.Unlock()
		close(c.done)
		if c.err != nil || c.target >= seq {
			return c.err
		}
	}
}

// maxKeptWriteBuf bounds the write buffer a File keeps between appends.
const maxKeptWriteBuf = 64 << 10

// writeLine appends one encoded line and its '\n' to buf.
func writeLine(buf *bytes.Buffer, line []byte) {
	buf.Write(line)
	buf.WriteByte('\n')
}
