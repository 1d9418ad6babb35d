package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gofrs/flock"
)

// Cursors is the files backend's Cursors: one small JSON file per
// scope, <dir>/<escaped scope>.json (0600, dir 0700), holding
// {"version":1,"cursors":{name: value}}. The scope is escaped so that it is
// always one file name inside dir: bytes other than a-z, 0-9, '_' and '-'
// become %XX (so "telegram:bot1" is telegram%3Abot1.json, and "../x"
// %2E%2E%2Fx.json). SetCursor takes <file>.lock with flock(2) (another
// process may set another name of the scope) and replaces the file
// atomically, so it is durable when it returns.
//
// It is safe for concurrent use; reads go to the file every time (cursors
// are read at start, not per message).
type Cursors struct {
	dir         string
	lockTimeout time.Duration

	mu sync.Mutex // serialises this process's read-modify-write of a file
}

// cursorFile is the on-disk form of one scope's cursors.
type cursorFile struct {
	Version int               `json:"version"`
	Cursors map[string]string `json:"cursors"`
}

const cursorVersion = 1

// NewCursors returns the cursors in dir, normally <stateDir>/cursors;
// the first SetCursor creates dir (0700). lockTimeout bounds waiting for
// another process's lock (DefaultPairingLockTimeout when 0).
func NewCursors(dir string, lockTimeout time.Duration) *Cursors {
	if lockTimeout <= 0 {
		lockTimeout = DefaultPairingLockTimeout
	}
	return &Cursors{dir: dir, lockTimeout: lockTimeout}
}

// Cursor implements Cursors.
func (c *Cursors) Cursor(_ context.Context, scope, name string) (string, bool, error) {
	if err := sessions.CheckCursor(scope, name, ""); err != nil {
		return "", false, err
	}
	m, err := c.read(scope)
	if err != nil {
		return "", false, err
	}
	v, ok := m[name]
	return v, ok, nil
}

// CursorsOf implements Cursors.
func (c *Cursors) CursorsOf(_ context.Context, scope string) (map[string]string, error) {
	if err := sessions.CheckCursorScope(scope); err != nil {
		return nil, err
	}
	return c.read(scope)
}

// SetCursor implements Cursors.
func (c *Cursors) SetCursor(ctx context.Context, scope, name, value string) error {
	if err := sessions.CheckCursor(scope, name, value); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("sessions: cursor: %w", err)
	}
	path := c.path(scope)
	lk := flock.New(path + ".lock")
	lctx, cancel := context.WithTimeout(ctx, c.lockTimeout)
	defer cancel()
	ok, err := lk.TryLockContext(lctx, 10*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("sessions: cursor: lock %s: %w", path, errors.Join(err, errors.New("timed out")))
	}
	defer func() { _ = lk.Unlock() }()
	m, err := c.read(scope)
	if err != nil {
		return err
	}
	if old, ok := m[name]; ok && old == value {
		return nil
	}
	m[name] = value
	b, err := json.MarshalIndent(cursorFile{Version: cursorVersion, Cursors: m}, "", "  ")
	if err != nil {
		return fmt.Errorf("sessions: cursor: encode %s: %w", path, err)
	}
	if err := writeFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("sessions: cursor: write %s: %w", path, err)
	}
	return nil
}

// read returns scope's cursors (empty when it has no file).
func (c *Cursors) read(scope string) (map[string]string, error) {
	path := c.path(scope)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: cursor: read %s: %w", path, err)
	}
	var f cursorFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("sessions: cursor: decode %s: %w", path, err)
	}
	if f.Version > cursorVersion {
		return nil, fmt.Errorf("sessions: cursor: %s has format version %d; this gateway reads up to %d",
			path, f.Version, cursorVersion)
	}
	out := make(map[string]string, len(f.Cursors))
	maps.Copy(out, f.Cursors)
	return out, nil
}

// path is scope's file: escapeScope makes it one name inside c.dir.
func (c *Cursors) path(scope string) string {
	return filepath.Join(c.dir, escapeScope(scope)+".json")
}

// escapeScope maps scope one-to-one onto a file name: a-z, 0-9, '_' and
// '-' stay, every other byte becomes %XX (upper-case hex), so no name is
// ".", "..", holds a separator, or differs from another only in case.
func escapeScope(scope string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(scope); i++ {
		ch := scope[i]
		if ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-' {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&15])
	}
	return b.String()
}

var _ sessions.Cursors = (*Cursors)(nil)

// CursorScopes lists the scopes with a cursor file, sorted.
func (c *Cursors) CursorScopes(context.Context) ([]string, error) {
	des, err := os.ReadDir(c.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: cursor scopes: %w", err)
	}
	var out []string
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || de.IsDir() {
			continue
		}
		if scope, ok := unescapeScope(name); ok {
			out = append(out, scope)
		}
	}
	slices.Sort(out)
	return out, nil
}

// unescapeScope inverts escapeScope; false for a name it never makes.
func unescapeScope(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		v, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	s := b.String()
	return s, escapeScope(s) == name
}
