package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"
	"go.uber.org/zap"
)

// historyFile is the room history log below <stateDir>/history.
const historyFile = "rooms.jsonl"

// historyGoneKeep is how many removed (taken or evicted) message ids are
// remembered, so a platform's redelivery of one is not kept a second time.
const historyGoneKeep = 8192

// HistoryEntry is one unaddressed room message kept for the next turn.
type HistoryEntry struct {
	// Seq orders entries across every room; a turn records the highest
	// Seq it took so the history can be cut after it.
	Seq        uint64
	MessageID  string
	SenderID   string
	SenderName string
	At         time.Time
	Text       string
}

// HistoryLimits bound one room's kept messages: at most Count entries and
// MaxBytes of text, oldest evicted first. Count 0 keeps nothing.
type HistoryLimits struct {
	Count    int
	MaxBytes int
}

// RoomHistory keeps the unaddressed messages of group rooms (groups, forum
// topics, Discord channels and threads), keyed by the room's session key,
// in one append-only JSONL log (<stateDir>/history/rooms.jsonl, 0600).
//
// Only a compact index lives in memory (sequence, offset and sizes of each
// kept line, about 40 bytes an entry); texts are read back from the file
// when a turn takes them. Append returns once its line is fsynced;
// concurrent appends share one fsync (group commit). Evictions, cuts and
// clears are logged as "cut" lines, so a restart rebuilds the same state;
// a torn last line is cut off at open. The log is rewritten from its live
// lines when dead ones dominate it. One process holds it (a flock on
// rooms.jsonl.lock). It is safe for concurrent use.
type RoomHistory struct {
	path    string
	log     *zap.Logger
	openErr error
	fl      *flock.Flock
	// compactMin is historyCompactMin; smaller in tests.
	compactMin int64

	mu      sync.Mutex // guards the fields below
	f       *os.File
	size    int64 // bytes of whole lines in the file
	live    int64 // bytes of the lines still referenced
	seq     uint64
	written uint64 // writes so far (the group commit's sequence)
	rooms   map[string]*histRoom
	closed  bool
	// gone holds hashes of removed entries' room and message id, oldest
	// first in goneOrder (at most historyGoneKeep).
	gone      map[uint64]struct{}
	goneOrder []uint64

	syncMu sync.Mutex // serialises fsyncs; guards synced
	synced uint64

	appends, fsyncs atomic.Int64
}

// histRoom is one room's kept entries, oldest first.
type histRoom struct {
	refs  []histRef
	bytes int // text bytes of refs
}

// histRef locates one kept line in the log.
type histRef struct {
	seq  uint64
	off  int64
	n    uint32 // line length with its newline
	text uint32 // text bytes (for HistoryLimits.MaxBytes)
	id   uint64 // hash of room and platform message id (redelivery dedupe)
}

// histLine is one line of the log.
type histLine struct {
	Op   string    `json:"op"` // add, cut
	Seq  uint64    `json:"seq"`
	Room string    `json:"room"`
	ID   string    `json:"id,omitempty"`
	From string    `json:"from,omitempty"`
	Name string    `json:"name,omitempty"`
	At   time.Time `json:"at,omitzero"`
	Text string    `json:"text,omitempty"`
}

// HistoryStats counts the room history's work since it was opened.
type HistoryStats struct {
	Rooms, Entries  int
	Appends, Fsyncs int64
	FileBytes       int64
	LiveBytes       int64
}

// History returns the room history, opening it on first use. If it cannot
// be opened, every method of the returned RoomHistory reports why.
func (m *Manager) History() *RoomHistory {
	m.hmu.Lock()
	defer m.hmu.Unlock()
	if m.history == nil {
		m.history = OpenRoomHistory(filepath.Join(m.opts.StateDir, "history"), m.log.Named("history"))
	}
	return m.history
}

// OpenRoomHistory opens (creating) the room history log in dir (0700).
func OpenRoomHistory(dir string, log *zap.Logger) *RoomHistory {
	if log == nil {
		log = zap.NewNop()
	}
	h := &RoomHistory{path: filepath.Join(dir, historyFile), log: log, rooms: map[string]*histRoom{},
		gone: map[uint64]struct{}{}, compactMin: historyCompactMin}
	if err := h.open(dir); err != nil {
		h.openErr = fmt.Errorf("sessions: room history: %w", err)
		log.Error("room history unavailable", zap.Error(err))
	}
	return h
}

func (h *RoomHistory) open(dir string) error {
	if err := mkdirPrivate(dir); err != nil {
		return err
	}
	h.fl = flock.New(h.path+lockExt, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := h.fl.TryLock()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is held by another process", h.path+lockExt)
	}
	f, err := os.OpenFile(h.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		_ = h.fl.Unlock()
		return err
	}
	h.f = f
	if err := h.replay(); err != nil {
		_ = f.Close()
		_ = h.fl.Unlock()
		return err
	}
	return nil
}

// Seq is the sequence number of the latest kept message: a turn for a
// message accepted now takes the entries up to it, never later ones.
func (h *RoomHistory) Seq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Append keeps e in room (a session key) within lim, evicting the oldest
// entries beyond it, and returns once the line is durable. A message id
// already kept (or recently taken) in the room is a redelivery: dup is true
// and nothing is written. Text beyond lim.MaxBytes is cut.
func (h *RoomHistory) Append(ctx context.Context, room string, e HistoryEntry, lim HistoryLimits) (dup bool, err error) {
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
func (h *RoomHistory) Add(ctx context.Context, room string, e HistoryEntry, lim HistoryLimits) (dup bool, wait func() error, err error) {
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
	ref := histRef{seq: seq, off: h.size, n: uint32(len(line)), text: uint32(len(e.Text)), id: id}
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
func evictions(r *histRoom, add histRef, lim HistoryLimits) uint64 {
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

// Take returns room's entries up to sequence upTo, oldest first: the newest
// lim.Count of them within lim.MaxBytes. It does not remove them: the
// caller cuts them (Cut) once the turn that holds them is durable.
func (h *RoomHistory) Take(room string, upTo uint64, lim HistoryLimits) ([]HistoryEntry, error) {
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
	out := make([]HistoryEntry, 0, end-start)
	for _, ref := range r.refs[start:end] {
		buf := make([]byte, ref.n)
		if _, err := h.f.ReadAt(buf, ref.off); err != nil {
			return nil, fmt.Errorf("sessions: history take: read %s at %d: %w", h.path, ref.off, err)
		}
		var l histLine
		if err := json.Unmarshal(buf, &l); err != nil || l.Seq != ref.seq {
			return nil, fmt.Errorf("sessions: history take: line at %d of %s does not match its index", ref.off, h.path)
		}
		out = append(out, HistoryEntry{Seq: l.Seq, MessageID: l.ID, SenderID: l.From, SenderName: l.Name, At: l.At, Text: l.Text})
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
func (h *RoomHistory) Stats() HistoryStats {
	h.mu.Lock()
	st := HistoryStats{Rooms: len(h.rooms), FileBytes: h.size, LiveBytes: h.live}
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

// writeLocked appends b whole or cuts the file back to the last whole line.
func (h *RoomHistory) writeLocked(b []byte) error {
	if h.closed {
		return errors.New("room history closed")
	}
	n, err := h.f.Write(b)
	if err == nil && n < len(b) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	if err != nil {
		if n > 0 {
			if terr := h.f.Truncate(h.size); terr != nil {
				err = errors.Join(err, fmt.Errorf("cut back: %w", terr))
			}
		}
		return fmt.Errorf("%w: write %s: %w", ErrStorage, h.path, err)
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
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w: fsync %s: %w", ErrStorage, h.path, err)
	}
	h.synced = target
	return nil
}

// Close syncs and closes the log and releases its lock.
func (h *RoomHistory) Close() error {
	if h.openErr != nil {
		return nil
	}
	h.syncMu.Lock()
	defer h.syncMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	err := errors.Join(h.f.Sync(), h.f.Close())
	_ = os.Truncate(h.path+lockExt, 0)
	return errors.Join(err, h.fl.Unlock())
}

func encodeHistLine(l histLine) ([]byte, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// hashID hashes a room and a platform message id (0: no id).
func hashID(room, id string) uint64 {
	if id == "" {
		return 0
	}
	f := fnv.New64a()
	_, _ = f.Write([]byte(room))
	_, _ = f.Write([]byte{0})
	_, _ = f.Write([]byte(id))
	return f.Sum64() | 1 // never 0, which means "no id"
}

// truncUTF8 cuts s to at most n bytes on a rune boundary.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
