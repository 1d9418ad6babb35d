package filestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gateway/gateway/internal/atomicfile"
	"github.com/gateway/gateway/sessions"
)

// roomMessagesFile is the files backend's RoomMessages log under
// <stateDir>/history.
const roomMessagesFile = "messages.jsonl"

// RoomMessages is the files backend's RoomMessages: an append-only
// JSON-lines log, <dir>/messages.jsonl (0600, dir 0700), one line per
// noted message ({"room","id","own","at"}; {"room","id","gone":true} for a
// forgotten one), read once at first use into a
// map per room. A note is one write(2) without fsync: it survives the
// process, not a power cut (the message tool then calls an older message
// unknown, nothing worse). When the file holds twice as many lines as the
// rooms keep (plus roomMessagesSlack), it is rewritten with the live
// lines (atomically). A torn last line is ignored and rewritten away.
//
// It serves one process (the daemon holds the state dir); it is safe for
// concurrent use by its goroutines.
type RoomMessages struct {
	path string
	keep int

	mu     sync.Mutex // guards everything below
	loaded bool
	err    error              // why the log could not be read
	rooms  map[string]*msgLog // by room
	lines  int                // lines in the file
	live   int                // messages kept in rooms
}

// roomMessagesSlack is how many superseded lines the file may hold on top
// of twice the live ones before it is rewritten.
const roomMessagesSlack = 4096

// msgLog is one room's noted messages, oldest first.
type msgLog struct {
	byID  map[string]sessions.RoomMessage
	order []string
}

type msgLine struct {
	Room string `json:"room"`
	sessions.RoomMessage
	// Gone drops the message (ForgetMessage).
	Gone bool `json:"gone,omitempty"`
}

// NewRoomMessages returns the record in dir (normally
// <stateDir>/history); the first note creates dir and the file.
func NewRoomMessages(dir string) *RoomMessages {
	return &RoomMessages{path: filepath.Join(dir, roomMessagesFile), keep: sessions.RoomMessagesKeep}
}

// NoteMessages implements RoomMessages.
func (f *RoomMessages) NoteMessages(_ context.Context, room string, msgs []sessions.RoomMessage) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, m := range msgs {
		if err := sessions.CheckRoomMessage(room, m.ID); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return err
	}
	var fresh []sessions.RoomMessage
	for _, m := range msgs {
		if old, ok := f.rooms[room].get(m.ID); ok && (old.Own || !m.Own) {
			continue // nothing new
		}
		if m.At.IsZero() {
			m.At = time.Now()
		}
		m.At = m.At.UTC()
		if err := enc.Encode(msgLine{Room: room, RoomMessage: m}); err != nil {
			return fmt.Errorf("sessions: note room messages: %w", err)
		}
		fresh = append(fresh, m)
	}
	if len(fresh) == 0 {
		return nil
	}
	if err := f.appendLocked(buf.Bytes()); err != nil {
		return fmt.Errorf("sessions: note room messages: %w", err)
	}
	for _, m := range fresh {
		f.addLocked(room, m)
	}
	f.lines += len(fresh)
	if f.lines > 2*f.live+roomMessagesSlack {
		if err := f.rewriteLocked(); err != nil {
			return fmt.Errorf("sessions: note room messages: compact: %w", err)
		}
	}
	return nil
}

// RoomMessage implements RoomMessages.
func (f *RoomMessages) RoomMessage(_ context.Context, room, id string) (sessions.RoomMessage, bool, error) {
	if err := sessions.CheckRoomMessage(room, id); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	m, ok := f.rooms[room].get(id)
	return m, ok, nil
}

// ForgetMessage implements RoomMessages: a "gone" line.
func (f *RoomMessages) ForgetMessage(_ context.Context, room, id string) error {
	if err := sessions.CheckRoomMessage(room, id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return err
	}
	if _, ok := f.rooms[room].get(id); !ok {
		return nil
	}
	b, err := json.Marshal(msgLine{Room: room, RoomMessage: sessions.RoomMessage{ID: id}, Gone: true})
	if err != nil {
		return fmt.Errorf("sessions: forget room message: %w", err)
	}
	if err := f.appendLocked(append(b, '\n')); err != nil {
		return fmt.Errorf("sessions: forget room message: %w", err)
	}
	f.lines++
	f.dropLocked(room, id)
	return nil
}

// dropLocked removes id from room's record.
func (f *RoomMessages) dropLocked(room, id string) {
	l := f.rooms[room]
	if _, ok := l.get(id); !ok {
		return
	}
	delete(l.byID, id)
	if i := slices.Index(l.order, id); i >= 0 {
		l.order = slices.Delete(l.order, i, i+1)
	}
	f.live--
	if len(l.order) == 0 {
		delete(f.rooms, room)
	}
}

// LatestMessage implements RoomMessages.
func (f *RoomMessages) LatestMessage(_ context.Context, room string, own bool) (sessions.RoomMessage, bool, error) {
	if err := sessions.CheckRoomMessage(room, "-"); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	l := f.rooms[room]
	if l == nil {
		return sessions.RoomMessage{}, false, nil
	}
	for i := len(l.order) - 1; i >= 0; i-- {
		if m := l.byID[l.order[i]]; m.Own || !own {
			return m, true, nil
		}
	}
	return sessions.RoomMessage{}, false, nil
}

func (l *msgLog) get(id string) (sessions.RoomMessage, bool) {
	if l == nil {
		return sessions.RoomMessage{}, false
	}
	m, ok := l.byID[id]
	return m, ok
}

// addLocked records m in room, forgetting the room's oldest past keep.
func (f *RoomMessages) addLocked(room string, m sessions.RoomMessage) {
	l := f.rooms[room]
	if l == nil {
		l = &msgLog{byID: map[string]sessions.RoomMessage{}}
		f.rooms[room] = l
	}
	if old, ok := l.byID[m.ID]; ok {
		old.Own = old.Own || m.Own
		l.byID[m.ID] = old
		return
	}
	l.byID[m.ID] = m
	l.order = append(l.order, m.ID)
	f.live++
	for len(l.order) > f.keep {
		delete(l.byID, l.order[0])
		l.order = l.order[1:]
		f.live--
	}
	if cap(l.order) > 4*f.keep { // let the dropped prefix go
		l.order = append([]string(nil), l.order...)
	}
}

// loadLocked reads the file at first use; a file that does not exist is
// an empty record.
func (f *RoomMessages) loadLocked() error {
	if f.loaded {
		return f.err
	}
	f.loaded, f.rooms = true, map[string]*msgLog{}
	file, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.err = fmt.Errorf("sessions: room messages: %w", err)
		return f.err
	}
	defer file.Close()
	r := bufio.NewReader(file)
	torn := false
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var l msgLine
			if line[len(line)-1] != '\n' || json.Unmarshal(line, &l) != nil || sessions.CheckRoomMessage(l.Room, l.ID) != nil {
				torn = true // a cut last line, or damage: dropped at the rewrite below
			} else {
				if l.Gone {
					f.dropLocked(l.Room, l.ID)
				} else {
					f.addLocked(l.Room, l.RoomMessage)
				}
				f.lines++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			f.err = fmt.Errorf("sessions: room messages: read: %w", err)
			return f.err
		}
	}
	if torn {
		if err := f.rewriteLocked(); err != nil {
			f.err = fmt.Errorf("sessions: room messages: rewrite: %w", err)
			return f.err
		}
	}
	return nil
}

func (f *RoomMessages) appendLocked(b []byte) error {
	if err := mkdirPrivate(filepath.Dir(f.path)); err != nil {
		return err
	}
	file, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = file.Write(b)
	return errors.Join(err, file.Close())
}

// rewriteLocked replaces the file by the live messages, oldest first per room.
func (f *RoomMessages) rewriteLocked() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for room, l := range f.rooms {
		for _, id := range l.order {
			if err := enc.Encode(msgLine{Room: room, RoomMessage: l.byID[id]}); err != nil {
				return err
			}
		}
	}
	if err := mkdirPrivate(filepath.Dir(f.path)); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.path, buf.Bytes(), 0o600); err != nil {
		return err
	}
	f.lines = f.live
	return nil
}

var _ sessions.RoomMessages = (*RoomMessages)(nil)
