package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/sessions"
	"github.com/gofrs/flock"
	"go.uber.org/zap"
)

// historyFile is the room history log below <stateDir>/history.
const historyFile = "rooms.jsonl"

// historyGoneKeep is how many removed (taken or evicted) message ids are
// remembered, so a platform's redelivery of one is not kept a second time.
const historyGoneKeep = 8192

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
	// write appends to the log ((*os.File).Write) and fsync makes it
	// durable ((*os.File).Sync); tests inject faults.
	write func(f *os.File, b []byte) (int, error)
	fsync func(f *os.File) error

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

	syncMu sync.Mutex // serialises fsyncs; guards synced, failed, ferr
	synced uint64
	// failed is the last write a failed fsync covered, ferr its error:
	// those writes stay failed, as the kernel reports a lost write-back
	// once and the next fsync succeeds without them.
	failed uint64
	ferr   error

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
	at   int64  // the message's time, unix milliseconds
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
		gone: map[uint64]struct{}{}, compactMin: historyCompactMin, write: (*os.File).Write, fsync: (*os.File).Sync}
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
		li, _ := ReadLockInfo(h.path + lockExt)
		return fmt.Errorf("%s is held by pid %d on host %q", h.path+lockExt, li.PID, li.Host)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(LockInfo{PID: os.Getpid(), StartTime: processStart(), CreatedAt: time.Now().UTC(), Host: host})
	_ = os.WriteFile(h.path+lockExt, b, 0o600)
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

// Rooms lists the rooms with kept entries, sorted.
func (h *RoomHistory) Rooms(context.Context) ([]string, error) {
	if h.openErr != nil {
		return nil, h.openErr
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for room, r := range h.rooms {
		if len(r.refs) > 0 {
			out = append(out, room)
		}
	}
	slices.Sort(out)
	return out, nil
}

var _ sessions.RoomLog = (*RoomHistory)(nil)
