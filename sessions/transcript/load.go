package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
)

// Loading a transcript reads it from the end: the leaf is the last line, and
// the chain is walked back through parsed entries, reading earlier blocks
// only while the walk needs an entry not read yet. It stops at the latest
// compaction's firstKeptEntryId, so a session compacted near the end of a
// huge file costs only the kept tail. Lines never need a size limit: blocks
// grow until they hold a line start. Any anomaly on this path (a bad line,
// whose number is unknown when reading backwards) falls back to a full
// forward read, which reports the line number.

// errFallback asks for the forward loader.
var errFallback = errors.New("transcript: reread forward")

const (
	firstBlock = 32 << 10
	maxBlock   = 4 << 20
)

type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }

func (e *lineError) Unwrap() error { return e.err }

// loadTail reads the header, the last line and then as little as the chain
// needs. hint is the offset of a compaction entry (0 for none).
func loadTail(f io.ReaderAt, fi os.FileInfo, hint int64, log *zap.Logger) (*fileState, error) {
	st := newFileState(fi)
	size := fi.Size()
	if size == 0 {
		st.view = &chainView{}
		return st, nil
	}
	first, err := ReadLineAt(f, 0, size)
	if err != nil {
		return nil, err
	}
	if first[len(first)-1] != '\n' { // the whole file is one unterminated line
		if h, err := ParseHeader(first); err == nil {
			st.hdr, st.headerEnd, st.end, st.lo, st.needNL = &h, size, size, size, true
		} else {
			log.Warn("transcript: ignoring torn last line", zap.Int("line", 1), zap.Int64("bytes", size))
			st.tornAt = 0
		}
		return st, st.ensureView(f)
	}
	h, err := ParseHeader(first)
	if err != nil {
		return nil, &lineError{1, err}
	}
	st.hdr, st.headerEnd = &h, int64(len(first))

	nl, err := lastNewline(f, st.headerEnd, size)
	if err != nil {
		return nil, err
	}
	st.end, st.lo = nl+1, nl+1
	if st.end < size { // unterminated last line
		frag := make([]byte, size-st.end)
		if _, err := f.ReadAt(frag, st.end); err != nil {
			return nil, fmt.Errorf("transcript: read: %w", err)
		}
		st.parsed++
		if n, err := ParseEntry(frag, st.end); err == nil {
			if n != nil {
				st.add(n)
			}
			st.end, st.needNL = size, true
		} else {
			log.Warn("transcript: ignoring torn last line", zap.Int64("offset", st.end), zap.Int64("bytes", size-st.end))
			st.tornAt = st.end
		}
	}
	if hint > st.headerEnd && hint < st.lo {
		st.tryHint(f, hint)
	}
	if err := st.ensureView(f); err != nil {
		return nil, err
	}
	return st, nil
}

// tryHint reads [hint, lo) forward if hint is the start of a compaction line.
func (st *fileState) tryHint(f io.ReaderAt, hint int64) {
	var prev [1]byte
	if _, err := f.ReadAt(prev[:], hint-1); err != nil || prev[0] != '\n' {
		return
	}
	first, err := ReadLineAt(f, hint, st.lo)
	if err != nil || len(first) == 0 || first[len(first)-1] != '\n' {
		return
	}
	if n, err := ParseEntry(first, hint); err != nil || n == nil || n.Kind != KindCompaction {
		return
	}
	buf := make([]byte, st.lo-hint)
	if _, err := f.ReadAt(buf, hint); err != nil {
		return
	}
	var parsed []*Node
	for b, off := buf, hint; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return
		}
		n, err := ParseEntry(b[:i], off)
		if err != nil || (len(parsed) == 0 && (n == nil || n.Kind != KindCompaction)) {
			return // not a compaction line, or a bad line the backward walk will report
		}
		if n != nil {
			parsed = append(parsed, n)
		}
		b, off = b[i+1:], off+int64(i)+1
	}
	st.parsed += len(parsed)
	for _, n := range parsed {
		st.add(n)
	}
	st.lo = hint
}

// ensureView resolves the chain, reading backwards while it needs entries.
func (st *fileState) ensureView(f io.ReaderAt) error {
	for st.view == nil {
		v, more := st.resolve()
		if !more {
			st.view = v
			return nil
		}
		if err := st.extendBackward(f); err != nil {
			return err
		}
	}
	return nil
}

// inChain reports whether id is on the chain ending at the leaf, reading
// earlier blocks only as far as the walk needs.
func (st *fileState) inChain(f io.ReaderAt, id string) (bool, error) {
	for cur, steps := st.leaf, 0; cur != "" && steps <= len(st.nodes); {
		if cur == id {
			return true, nil
		}
		n, ok := st.nodes[cur]
		if !ok {
			if st.lo <= st.headerEnd {
				return false, nil
			}
			if err := st.extendBackward(f); err != nil {
				return false, err
			}
			continue
		}
		steps++
		cur = n.Parent
	}
	return false, nil
}

// loadAll reads whatever precedes lo.
func (st *fileState) loadAll(f io.ReaderAt) error {
	for st.lo > st.headerEnd {
		if err := st.extendBackward(f); err != nil {
			return err
		}
	}
	return nil
}

// extendBackward parses the complete lines of the block before lo.
func (st *fileState) extendBackward(f io.ReaderAt) error {
	for {
		s := max(st.headerEnd, st.lo-st.block)
		buf := make([]byte, st.lo-s)
		if _, err := f.ReadAt(buf, s); err != nil {
			return fmt.Errorf("transcript: read: %w", err)
		}
		start := 0
		if s > st.headerEnd {
			// buf ends with the '\n' of the line before lo; a line start
			// needs another '\n' before it.
			i := bytes.IndexByte(buf[:len(buf)-1], '\n')
			if i < 0 { // one line longer than the block
				st.block *= 2
				continue
			}
			start = i + 1
		}
		if st.block < maxBlock {
			st.block *= 2
		}
		if err := st.parseBlock(buf[start:], s+int64(start)); err != nil {
			return err
		}
		st.lo = s + int64(start)
		return nil
	}
}

// parseBlock parses '\n'-terminated lines starting at offset off.
func (st *fileState) parseBlock(b []byte, off int64) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return errFallback
		}
		st.parsed++
		n, err := ParseEntry(b[:i], off)
		if err != nil {
			return errFallback
		}
		if n != nil {
			st.add(n)
		}
		b, off = b[i+1:], off+int64(i)+1
	}
	return nil
}

// loadForward reads the whole file from the start, numbering lines.
func loadForward(f io.ReaderAt, fi os.FileInfo, log *zap.Logger) (*fileState, error) {
	st := newFileState(fi)
	size := fi.Size()
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	var (
		buf  []byte
		off  int64
		line int
	)
	for off < size {
		var err error
		buf, err = ReadLine(r, buf[:0])
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("transcript: read: %w", err)
		}
		line++
		complete := len(buf) > 0 && buf[len(buf)-1] == '\n'
		if line == 1 {
			h, err := ParseHeader(buf)
			switch {
			case err == nil:
				st.hdr, st.headerEnd = &h, int64(len(buf))
				st.needNL = !complete
			case !complete:
				log.Warn("transcript: ignoring torn last line", zap.Int("line", line), zap.Int("bytes", len(buf)))
				st.tornAt = 0
				return st, st.ensureView(f)
			default:
				return nil, &lineError{line, err}
			}
		} else {
			st.parsed++
			n, err := ParseEntry(buf, off)
			switch {
			case err == nil:
				if n != nil {
					st.add(n)
				}
				st.needNL = !complete
			case !complete:
				log.Warn("transcript: ignoring torn last line", zap.Int("line", line), zap.Int("bytes", len(buf)))
				st.tornAt = off
				st.end = off
				st.lo = st.headerEnd
				return st, st.ensureView(f)
			default:
				// Outside damage (the writer never leaves a bad whole line):
				// skip it so the session stays usable; `gateway doctor` finds
				// it and --fix quarantines it.
				log.Warn("transcript: skipping a bad line", zap.Int("line", line), zap.Int64("offset", off), zap.Error(err))
				st.badLines++
			}
		}
		off += int64(len(buf))
	}
	st.end = off
	st.lo = st.headerEnd
	return st, st.ensureView(f)
}
