package filestore

import (
	"encoding/json"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"time"
)

// Take returns room's entries up to sequence upTo, oldest first: the newest
// lim.Count of them within lim.MaxBytes. It does not remove them: the
// caller cuts them (Cut) once the turn that holds them is durable.
func (h *RoomHistory) Take(room string, upTo uint64, lim sessions.HistoryLimits) ([]sessions.HistoryEntry, error) {
	if h.openErr != nil {
		return nil, h.openErr
	}
	if lim.Count <= 0 {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rooms[room]
	if r == nil || h.closed {
		return nil, nil
	}
	end := len(r.refs)
	for end > 0 && r.refs[end-1].seq > upTo {
		end--
	}
	start, bytes := end, 0
	for start > 0 && end-start < lim.Count {
		b := bytes + int(r.refs[start-1].text)
		if lim.MaxBytes > 0 && b > lim.MaxBytes {
			break
		}
		start, bytes = start-1, b
	}
	out := make([]sessions.HistoryEntry, 0, end-start)
	for _, ref := range r.refs[start:end] {
		buf := make([]byte, ref.n)
		if _, err := h.f.ReadAt(buf, ref.off); err != nil {
			return nil, fmt.Errorf("sessions: history take: read %s at %d: %w", h.path, ref.off, err)
		}
		var l histLine
		if err := json.Unmarshal(buf, &l); err != nil || l.Seq != ref.seq {
			return nil, fmt.Errorf("sessions: history take: line at %d of %s does not match its index", ref.off, h.path)
		}
		out = append(out, sessions.HistoryEntry{Seq: l.Seq, MessageID: l.ID, SenderID: l.From, SenderName: l.Name, At: l.At, Text: l.Text})
	}
	return out, nil
}

// Cut removes room's entries up to sequence upTo (a turn took them) and
// returns once that is durable. Cutting nothing writes nothing.
func (h *RoomHistory) Cut(room string, upTo uint64) error {
	if h.openErr != nil {
		return h.openErr
	}
	h.mu.Lock()
	r := h.rooms[room]
	if r == nil || len(r.refs) == 0 || r.refs[0].seq > upTo {
		h.mu.Unlock()
		return nil
	}
	line, err := encodeHistLine(histLine{Op: "cut", Seq: upTo, Room: room})
	if err == nil {
		err = h.writeLocked(line)
	}
	// Memory is cut even if the line was not written: this process never
	// hands the entries out again.
	h.cutLocked(room, upTo)
	w := h.written
	h.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sessions: history cut: %w", err)
	}
	if err := h.syncTo(w); err != nil {
		return fmt.Errorf("sessions: history cut: %w", err)
	}
	return nil
}

// Clear removes every entry of room (a reset of its session).
func (h *RoomHistory) Clear(room string) error {
	if h.openErr != nil {
		return h.openErr
	}
	return h.Cut(room, h.Seq())
}

// ClearBefore removes room's entries sent before t (an automatic reset:
// what was said before the session expired belongs to the session that
// ended; what came after stays for the new one).
func (h *RoomHistory) ClearBefore(room string, t time.Time) error {
	if h.openErr != nil {
		return h.openErr
	}
	ms := t.UnixMilli()
	var upTo uint64
	h.mu.Lock()
	if r := h.rooms[room]; r != nil {
		for _, ref := range r.refs {
			if ref.at < ms {
				upTo = ref.seq
			}
		}
	}
	h.mu.Unlock()
	if upTo == 0 {
		return nil
	}
	return h.Cut(room, upTo)
}

// Len is how many entries room keeps.
func (h *RoomHistory) Len(room string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.rooms[room]; r != nil {
		return len(r.refs)
	}
	return 0
}

// Stats reports counters and sizes.
func (h *RoomHistory) Stats() sessions.HistoryStats {
	h.mu.Lock()
	st := sessions.HistoryStats{Rooms: len(h.rooms), FileBytes: h.size, LiveBytes: h.live}
	for _, r := range h.rooms {
		st.Entries += len(r.refs)
	}
	h.mu.Unlock()
	st.Appends, st.Fsyncs = h.appends.Load(), h.fsyncs.Load()
	return st
}

// cutLocked drops room's entries with seq <= upTo from memory.
func (h *RoomHistory) cutLocked(room string, upTo uint64) {
	r := h.rooms[room]
	if r == nil {
		return
	}
	i := 0
	for i < len(r.refs) && r.refs[i].seq <= upTo {
		h.forgetLocked(r.refs[i].id)
		r.bytes -= int(r.refs[i].text)
		h.live -= int64(r.refs[i].n)
		i++
	}
	if i == len(r.refs) {
		delete(h.rooms, room)
		return
	}
	// Copy down so the backing array does not grow without bound.
	r.refs = append(r.refs[:0], r.refs[i:]...)
}
