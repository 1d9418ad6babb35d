package filestore

import (
	"context"
	"errors"
	"fmt"
	"github.com/gateway/gateway/sessions"
)

// Append keeps e in room (a session key) within lim, evicting the oldest
// entries beyond it, and returns once the line is durable. A message id
// already kept (or recently taken) in the room is a redelivery: dup is true
// and nothing is written. Text beyond lim.MaxBytes is cut.
func (h *RoomHistory) Append(ctx context.Context, room string, e sessions.HistoryEntry, lim sessions.HistoryLimits) (dup bool, err error) {
	dup, wait, err := h.Add(ctx, room, e, lim)
	if err != nil {
		return dup, err
	}
	return dup, wait()
}

// Add is Append without waiting: the line is written (it survives the
// death of the process) and wait returns once it is durable. Callers that
// acknowledge a batch of messages at once call every wait (the first does
// the fsync; the rest find it done) before acknowledging.
func (h *RoomHistory) Add(ctx context.Context, room string, e sessions.HistoryEntry, lim sessions.HistoryLimits) (dup bool, wait func() error, err error) {
	if h.openErr != nil {
		return false, nil, h.openErr
	}
	if err := ctx.Err(); err != nil {
		return false, nil, fmt.Errorf("sessions: history append: %w", err)
	}
	if lim.Count <= 0 || room == "" {
		return false, noWait, nil
	}
	if lim.MaxBytes > 0 && len(e.Text) > lim.MaxBytes {
		e.Text = truncUTF8(e.Text, lim.MaxBytes)
	}
	id := hashID(room, e.MessageID)
	h.mu.Lock()
	if h.seenLocked(room, id) {
		w := h.written
		h.mu.Unlock()
		// The first append may still be syncing.
		return true, h.waiter(w), nil
	}
	r := h.rooms[room]
	seq := h.seq + 1
	line, err := encodeHistLine(histLine{Op: "add", Seq: seq, Room: room, ID: e.MessageID, From: e.SenderID,
		Name: e.SenderName, At: e.At.UTC(), Text: e.Text})
	if err != nil {
		h.mu.Unlock()
		return false, nil, fmt.Errorf("sessions: history append: %w", err)
	}
	ref := histRef{seq: seq, off: h.size, n: uint32(len(line)), text: uint32(len(e.Text)), id: id, at: e.At.UnixMilli()}
	// The eviction this add causes is written with it: one write, one fsync.
	cut := evictions(r, ref, lim)
	if cut > 0 {
		c, err := encodeHistLine(histLine{Op: "cut", Seq: cut, Room: room})
		if err != nil {
			h.mu.Unlock()
			return false, nil, fmt.Errorf("sessions: history append: %w", err)
		}
		line = append(line, c...)
	}
	if err := h.writeLocked(line); err != nil {
		h.mu.Unlock()
		return false, nil, fmt.Errorf("sessions: history append: %w", err)
	}
	h.seq = seq
	if r == nil {
		r = &histRoom{}
		h.rooms[room] = r
	}
	r.refs = append(r.refs, ref)
	r.bytes += int(ref.text)
	h.live += int64(ref.n)
	if cut > 0 {
		h.cutLocked(room, cut)
	}
	w := h.written
	h.mu.Unlock()
	h.appends.Add(1)
	return false, h.waiter(w), nil
}

// waiter returns a func that waits until write w is durable, then gives
// the log a chance to compact.
func (h *RoomHistory) waiter(w uint64) func() error {
	return func() error {
		if err := h.syncTo(w); err != nil {
			return fmt.Errorf("sessions: history append: %w", err)
		}
		h.maybeCompact()
		return nil
	}
}

func noWait() error { return nil }

// seenLocked reports whether id (hashID) is kept in room or was removed
// recently.
func (h *RoomHistory) seenLocked(room string, id uint64) bool {
	if id == 0 {
		return false
	}
	if _, ok := h.gone[id]; ok {
		return true
	}
	if r := h.rooms[room]; r != nil {
		for _, ref := range r.refs {
			if ref.id == id {
				return true
			}
		}
	}
	return false
}

// forgetLocked remembers a removed entry's id for redelivery dedupe.
func (h *RoomHistory) forgetLocked(id uint64) {
	if id == 0 {
		return
	}
	if _, ok := h.gone[id]; ok {
		return
	}
	h.gone[id] = struct{}{}
	h.goneOrder = append(h.goneOrder, id)
	if len(h.goneOrder) > 2*historyGoneKeep {
		for _, old := range h.goneOrder[:len(h.goneOrder)-historyGoneKeep] {
			delete(h.gone, old)
		}
		h.goneOrder = append(h.goneOrder[:0], h.goneOrder[len(h.goneOrder)-historyGoneKeep:]...)
	}
}

// evictions is the highest sequence to cut from r so that r plus add fits
// lim (0: nothing to cut).
func evictions(r *histRoom, add histRef, lim sessions.HistoryLimits) uint64 {
	if r == nil {
		return 0
	}
	n, bytes := len(r.refs)+1, r.bytes+int(add.text)
	var cut uint64
	for i := 0; i < len(r.refs) && (n > lim.Count || (lim.MaxBytes > 0 && bytes > lim.MaxBytes)); i++ {
		cut = r.refs[i].seq
		n--
		bytes -= int(r.refs[i].text)
	}
	return cut
}

// writeLocked appends b whole or cuts the file back to the last whole line.
func (h *RoomHistory) writeLocked(b []byte) error {
	if h.closed {
		return errors.New("room history closed")
	}
	n, err := h.write(h.f, b)
	if err == nil && n < len(b) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	if err != nil {
		if n > 0 {
			if terr := h.f.Truncate(h.size); terr != nil {
				err = errors.Join(err, fmt.Errorf("cut back: %w", terr))
			}
		}
		return fmt.Errorf("%w: write %s: %w", sessions.ErrStorage, h.path, err)
	}
	h.size += int64(n)
	h.written++
	return nil
}

// syncTo returns once write w is durable. Callers arriving while an fsync
// runs wait for it and then share the next one (group commit).
func (h *RoomHistory) syncTo(w uint64) error {
	h.syncMu.Lock()
	defer h.syncMu.Unlock()
	if w <= h.failed {
		return h.ferr
	}
	if h.synced >= w {
		return nil
	}
	h.mu.Lock()
	target, f, closed := h.written, h.f, h.closed
	h.mu.Unlock()
	if closed {
		return errors.New("room history closed")
	}
	h.fsyncs.Add(1)
	if err := h.fsync(f); err != nil {
		h.failed = target
		h.ferr = fmt.Errorf("%w: fsync %s: %w", sessions.ErrStorage, h.path, err)
		return h.ferr
	}
	h.synced = target
	return nil
}
