package filestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gateway/gateway/sessions"
)

// Memory is the files backend's sessions.Memory: one JSON file per scope,
// <stateDir>/memory/<hash>.json (0600), where hash is the hex SHA-256 of
// the scope (agent, kind, id), so nothing a chat sends becomes a path;
// the file names its scope and a read checks it. A write takes
// <file>.lock with flock(2) (the CLI or another process may write too),
// reads the file, applies the change and replaces the file atomically
// (write, fsync, rename, fsync the directory): it is durable when it
// returns and no limit is passed by concurrent writers. A read takes no
// lock: the rename makes every version whole. A scope left empty has its
// file removed (its lock file stays, as the other stores' do).
//
// It is safe for concurrent use.
type Memory struct {
	dir         string
	lockTimeout time.Duration
	mu          sync.Mutex // serialises this process's writes (flock is per open file)
}

// memoryFile is the on-disk form of one scope.
type memoryFile struct {
	Version int                   `json:"version"`
	Scope   sessions.MemoryScope  `json:"scope"`
	NextID  int64                 `json:"nextId"`
	Notes   []sessions.MemoryNote `json:"notes"`
}

const memoryFileVersion = 1

// NewMemory returns the notes in dir, normally <stateDir>/memory; the
// first write creates dir (0700). lockTimeout bounds waiting for another
// process's lock (DefaultPairingLockTimeout when 0).
func NewMemory(dir string, lockTimeout time.Duration) *Memory {
	if lockTimeout <= 0 {
		lockTimeout = DefaultPairingLockTimeout
	}
	return &Memory{dir: dir, lockTimeout: lockTimeout}
}

// path is scope's file.
func (m *Memory) path(s sessions.MemoryScope) string {
	h := sha256.Sum256([]byte(s.AgentID + "\x00" + s.Kind + "\x00" + s.ID))
	return filepath.Join(m.dir, hex.EncodeToString(h[:16])+".json")
}

// Notes implements sessions.Memory.
func (m *Memory) Notes(_ context.Context, scope sessions.MemoryScope) ([]sessions.MemoryNote, error) {
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return nil, fmt.Errorf("sessions: memory: %w", err)
	}
	f, err := m.read(scope)
	if err != nil {
		return nil, err
	}
	return f.Notes, nil
}

// AddNote implements sessions.Memory.
func (m *Memory) AddNote(ctx context.Context, scope sessions.MemoryScope, text string, at time.Time, lim sessions.MemoryLimits) (sessions.MemoryNote, error) {
	lim, err := sessions.CheckMemoryWrite(scope, text, lim)
	if err != nil {
		return sessions.MemoryNote{}, err
	}
	var n sessions.MemoryNote
	err = m.update(ctx, scope, func(f *memoryFile) error {
		if len(f.Notes) >= lim.MaxNotes {
			return &sessions.MemoryFullError{Scope: scope, Max: lim.MaxNotes}
		}
		f.NextID++
		at = at.UTC().Truncate(time.Microsecond) // as PostgreSQL keeps it
		n = sessions.MemoryNote{ID: f.NextID, Text: text, CreatedAt: at, UpdatedAt: at}
		f.Notes = append(f.Notes, n)
		return nil
	})
	return n, err
}

// UpdateNote implements sessions.Memory.
func (m *Memory) UpdateNote(ctx context.Context, scope sessions.MemoryScope, id int64, text string, at time.Time, lim sessions.MemoryLimits) (sessions.MemoryNote, error) {
	if _, err := sessions.CheckMemoryWrite(scope, text, lim); err != nil {
		return sessions.MemoryNote{}, err
	}
	var n sessions.MemoryNote
	err := m.update(ctx, scope, func(f *memoryFile) error {
		i := slices.IndexFunc(f.Notes, func(x sessions.MemoryNote) bool { return x.ID == id })
		if i < 0 {
			return fmt.Errorf("memory %s: %w: %d", scope, sessions.ErrNoNote, id)
		}
		f.Notes[i].Text, f.Notes[i].UpdatedAt = text, at.UTC().Truncate(time.Microsecond)
		n = f.Notes[i]
		return nil
	})
	return n, err
}

// ForgetNote implements sessions.Memory.
func (m *Memory) ForgetNote(ctx context.Context, scope sessions.MemoryScope, id int64) error {
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return fmt.Errorf("sessions: memory: %w", err)
	}
	return m.update(ctx, scope, func(f *memoryFile) error {
		i := slices.IndexFunc(f.Notes, func(x sessions.MemoryNote) bool { return x.ID == id })
		if i < 0 {
			return fmt.Errorf("memory %s: %w: %d", scope, sessions.ErrNoNote, id)
		}
		f.Notes = slices.Delete(f.Notes, i, i+1)
		return nil
	})
}

// ForgetScope implements sessions.Memory.
func (m *Memory) ForgetScope(ctx context.Context, scope sessions.MemoryScope) (int, error) {
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return 0, fmt.Errorf("sessions: memory: %w", err)
	}
	n := 0
	err := m.update(ctx, scope, func(f *memoryFile) error {
		n, f.Notes = len(f.Notes), nil
		return nil
	})
	return n, err
}

// MemoryScopes implements sessions.Memory: it reads every scope's file.
func (m *Memory) MemoryScopes(_ context.Context, agentID string) ([]sessions.MemoryScopeInfo, error) {
	ents, err := os.ReadDir(m.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []sessions.MemoryScopeInfo{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: memory: list %s: %w", m.dir, err)
	}
	out := []sessions.MemoryScopeInfo{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		f, err := m.readPath(filepath.Join(m.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if len(f.Notes) == 0 || (agentID != "" && f.Scope.AgentID != agentID) {
			continue
		}
		info := sessions.MemoryScopeInfo{Scope: f.Scope, Notes: len(f.Notes)}
		for _, n := range f.Notes {
			info.Bytes += len(n.Text)
			if n.UpdatedAt.After(info.UpdatedAt) {
				info.UpdatedAt = n.UpdatedAt
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b sessions.MemoryScopeInfo) int {
		return cmp.Or(cmp.Compare(a.Scope.AgentID, b.Scope.AgentID), cmp.Compare(a.Scope.Kind, b.Scope.Kind), cmp.Compare(a.Scope.ID, b.Scope.ID))
	})
	return out, nil
}

// update runs change on scope's file under the locks and writes the
// result; an error from change stores nothing.
func (m *Memory) update(ctx context.Context, scope sessions.MemoryScope, change func(*memoryFile) error) error {
	path := m.path(scope)
	m.mu.Lock()
	defer m.mu.Unlock()
	return withFileLock(ctx, path, m.lockTimeout, "memory", func() error {
		f, err := m.read(scope)
		if err != nil {
			return err
		}
		if err := change(&f); err != nil {
			return err
		}
		if len(f.Notes) == 0 {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("sessions: memory: remove %s: %w", path, err)
			}
			if err := syncDir(m.dir); err != nil {
				return fmt.Errorf("sessions: memory: sync %s: %w", m.dir, err)
			}
			return nil
		}
		f.Version, f.Scope = memoryFileVersion, scope
		b, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("sessions: memory: encode: %w", err)
		}
		if err := writeFileAtomic(path, append(b, '\n')); err != nil {
			return fmt.Errorf("sessions: memory: write %s: %w", path, err)
		}
		return nil
	})
}

// read reads scope's file (an empty scope when there is none).
func (m *Memory) read(scope sessions.MemoryScope) (memoryFile, error) {
	f, err := m.readPath(m.path(scope))
	if err != nil {
		return f, err
	}
	if f.Version != 0 && f.Scope != scope {
		return memoryFile{}, fmt.Errorf("sessions: memory: %s holds scope %s, not %s", m.path(scope), f.Scope, scope)
	}
	return f, nil
}

func (m *Memory) readPath(path string) (memoryFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return memoryFile{Notes: []sessions.MemoryNote{}}, nil
	}
	if err != nil {
		return memoryFile{}, fmt.Errorf("sessions: memory: read %s: %w", path, err)
	}
	var f memoryFile
	if err := json.Unmarshal(b, &f); err != nil {
		return memoryFile{}, fmt.Errorf("sessions: memory: decode %s: %w", path, err)
	}
	if f.Version < 1 || f.Version > memoryFileVersion {
		return memoryFile{}, fmt.Errorf("sessions: memory: %s has format version %d; this gateway reads 1 to %d",
			path, f.Version, memoryFileVersion)
	}
	if f.Notes == nil {
		f.Notes = []sessions.MemoryNote{}
	}
	return f, nil
}

var _ sessions.Memory = (*Memory)(nil)
