package filestore

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"go.uber.org/zap"
)

// historyCompactMin is how many dead bytes the log must hold (and more
// than its live bytes) before it is rewritten from its live lines.
const historyCompactMin = 1 << 20

// replay rebuilds the index from the log. A torn last line (crash while
// appending) is cut off so the next append starts on a fresh line; other
// bad lines are skipped with a warning.
func (h *RoomHistory) replay() error {
	if _, err := h.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(h.f, 64<<10)
	var off, good int64
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		start := off
		off += int64(len(line))
		if len(line) > 0 && line[len(line)-1] != '\n' {
			h.log.Warn("torn last room history line ignored", zap.Int("line", lineNo), zap.Int("bytes", len(line)))
			break
		}
		if len(line) > 0 {
			h.applyLine(line, start, lineNo)
			good = off
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if fi, err := h.f.Stat(); err == nil && fi.Size() != good {
		if err := h.f.Truncate(good); err != nil {
			return err
		}
		if err := h.f.Sync(); err != nil {
			return err
		}
	}
	h.size = good
	return nil
}

// applyLine applies one log line found at off.
func (h *RoomHistory) applyLine(line []byte, off int64, lineNo int) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return
	}
	var l histLine
	if err := json.Unmarshal(t, &l); err != nil || l.Room == "" {
		h.log.Warn("bad room history line skipped", zap.Int("line", lineNo), zap.Error(err))
		return
	}
	h.seq = max(h.seq, l.Seq)
	switch l.Op {
	case "add":
		r := h.rooms[l.Room]
		if r == nil {
			r = &histRoom{}
			h.rooms[l.Room] = r
		}
		if n := len(r.refs); n > 0 && r.refs[n-1].seq >= l.Seq {
			return // out of order: never written so; ignore
		}
		ref := histRef{seq: l.Seq, off: off, n: uint32(len(line)), text: uint32(len(l.Text)), id: hashID(l.Room, l.ID), at: l.At.UnixMilli()}
		r.refs = append(r.refs, ref)
		r.bytes += int(ref.text)
		h.live += int64(ref.n)
	case "cut":
		h.cutLocked(l.Room, l.Seq)
	}
}

// maybeCompact rewrites the log from its live lines when dead lines
// dominate it. Appends wait while it runs (it reads only live lines).
func (h *RoomHistory) maybeCompact() {
	// Nearly every append finds nothing to do, and learns it without
	// syncMu: it must not wait for another append's fsync to find that out.
	h.mu.Lock()
	due := h.compactDueLocked()
	h.mu.Unlock()
	if !due {
		return
	}
	h.syncMu.Lock()
	defer h.syncMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.compactDueLocked() {
		return
	}
	if err := h.compactLocked(); err != nil {
		h.log.Warn("room history compaction failed", zap.Error(err))
	}
}

// compactDueLocked reports whether dead lines dominate the log (at least
// compactMin of them, and more than the live ones). The caller holds h.mu.
func (h *RoomHistory) compactDueLocked() bool {
	dead := h.size - h.live
	return !h.closed && dead >= h.compactMin && dead >= h.live
}

// compactLocked writes the live lines, oldest first, to a temporary file,
// fsyncs it, renames it over the log and fsyncs the directory; then the
// index points into the new file. A crash leaves the old or the new log.
func (h *RoomHistory) compactLocked() error {
	type item struct {
		room string
		i    int
	}
	var items []item
	for room, r := range h.rooms {
		for i := range r.refs {
			items = append(items, item{room, i})
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		sa, sb := h.rooms[a.room].refs[a.i].seq, h.rooms[b.room].refs[b.i].seq
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	tmp := h.path + "." + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(rb[:]) + ".tmp"
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	fail := func(err error) error {
		_ = nf.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("compact: %w", err)
	}
	w := bufio.NewWriterSize(nf, 64<<10)
	offs := make([]int64, len(items))
	var off int64
	var buf []byte
	for k, it := range items {
		ref := h.rooms[it.room].refs[it.i]
		buf = slices.Grow(buf[:0], int(ref.n))[:ref.n]
		if _, err := h.f.ReadAt(buf, ref.off); err != nil {
			return fail(err)
		}
		// A last seq for a room is the max of its adds: the cut lines are
		// not needed in a log holding only live lines.
		if _, err := w.Write(buf); err != nil {
			return fail(err)
		}
		offs[k] = off
		off += int64(ref.n)
	}
	// The highest sequence survives the rewrite even if its entry was cut,
	// so sequence numbers never go back (turns recorded them).
	if maxLive := h.maxLiveSeqLocked(); maxLive < h.seq {
		mark, err := encodeHistLine(histLine{Op: "cut", Seq: h.seq, Room: "-"})
		if err != nil {
			return fail(err)
		}
		if _, err := w.Write(mark); err != nil {
			return fail(err)
		}
		off += int64(len(mark))
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := nf.Sync(); err != nil {
		return fail(err)
	}
	if err := nf.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact: %w", err)
	}
	if err := syncDir(filepath.Dir(h.path)); err != nil {
		h.log.Warn("room history directory sync failed", zap.Error(err))
	}
	f, err := os.OpenFile(h.path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		h.closed = true // nothing can be appended safely any more
		return fmt.Errorf("compact: reopen: %w", err)
	}
	_ = h.f.Close()
	h.f = f
	for k, it := range items {
		h.rooms[it.room].refs[it.i].off = offs[k]
	}
	h.size = off // live bytes are the same lines, moved
	// Every live line is in the new file, fsynced: an earlier failed
	// fsync lost nothing kept.
	h.synced, h.failed, h.ferr = h.written, 0, nil
	return nil
}

func (h *RoomHistory) maxLiveSeqLocked() uint64 {
	var m uint64
	for _, r := range h.rooms {
		if n := len(r.refs); n > 0 {
			m = max(m, r.refs[n-1].seq)
		}
	}
	return m
}
