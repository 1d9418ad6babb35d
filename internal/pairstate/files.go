package pairstate

import (
	"context"
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

	"github.com/gofrs/flock"

	"github.com/gateway/gateway/internal/atomicfile"
)

// Files is the files implementation of State: one JSON file per
// channel, <dir>/<channel>.json (0600, dir 0700), the layout and format
// package access wrote before the storage seam. Updates take <channel>.json.lock
// with flock(2), so the daemon and the CLI (two processes) never lose each
// other's updates, and replace the file atomically (internal/atomicfile).
// Reads are served from a cache validated by the file's inode, mtime and
// size, so a change made by another process is seen on the next read.
//
// It is safe for concurrent use. Its mutex is held across the file I/O of
// one call (the state is small and updates are rare); UpdatePairing's fn
// runs under it and must not call the Files.
type Files struct {
	dir         string
	lockTimeout time.Duration

	mu    sync.Mutex            // guards files
	files map[string]*fileState // by channel
}

// pairingFile is the on-disk form of one channel's pairing state.
type pairingFile struct {
	Version int        `json:"version"`
	Pending []Request  `json:"pending"`
	Allowed []Approval `json:"allowed"`
}

// pairingVersion is the format version pairingFile is written with.
const pairingVersion = 1

// fileState caches one channel file with the stat it was read at.
type fileState struct {
	data Data
	// info is the stat the data was read at; a write by rename always
	// changes the inode, so os.SameFile catches writes within one mtime tick.
	info   fs.FileInfo
	exists bool
}

func (f *fileState) current(st fs.FileInfo) bool {
	return f != nil && f.exists && os.SameFile(f.info, st) &&
		f.info.ModTime().Equal(st.ModTime()) && f.info.Size() == st.Size()
}

// DefaultLockTimeout bounds waiting for another process's lock of a
// pairing file when NewFiles is given 0.
const DefaultLockTimeout = 10 * time.Second

// NewFiles returns the pairing state in dir, normally
// <stateDir>/pairing; the first update creates dir (0700). lockTimeout
// bounds waiting for another process's lock (DefaultLockTimeout
// when 0).
func NewFiles(dir string, lockTimeout time.Duration) *Files {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	return &Files{dir: dir, lockTimeout: lockTimeout, files: map[string]*fileState{}}
}

// Dir is the pairing directory.
func (p *Files) Dir() string { return p.dir }

// LoadPairing implements State.
func (p *Files) LoadPairing(_ context.Context, channel string) (Data, error) {
	if err := CheckChannel(channel); err != nil {
		return Data{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.loadLocked(channel)
	if err != nil {
		return Data{}, err
	}
	return f.data.Clone(), nil
}

// UpdatePairing implements State. fn's error is returned as it is.
func (p *Files) UpdatePairing(ctx context.Context, channel string, fn func(*Data) (bool, error)) error {
	if err := CheckChannel(channel); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	path := p.path(channel)
	lk := flock.New(path + ".lock")
	lctx, cancel := context.WithTimeout(ctx, p.lockTimeout)
	defer cancel()
	ok, err := lk.TryLockContext(lctx, 20*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("pairing: lock %s: %w", path, errors.Join(err, errors.New("timed out")))
	}
	defer func() { _ = lk.Unlock() }()
	f, err := p.loadLocked(channel)
	if err != nil {
		return err
	}
	d := f.data.Clone()
	changed, err := fn(&d)
	if err != nil || !changed {
		return err
	}
	if err := CheckData(channel, d); err != nil {
		return err
	}
	b, err := json.MarshalIndent(pairingFile{Version: pairingVersion, Pending: d.Pending, Allowed: d.Allowed}, "", "  ")
	if err != nil {
		return fmt.Errorf("pairing: encode %s: %w", path, err)
	}
	if _, err := atomicfile.WriteFileIfChanged(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("pairing: write %s: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("pairing: stat %s: %w", path, err)
	}
	p.files[channel] = &fileState{data: d.Clone(), info: st, exists: true}
	return nil
}

// PairingChannels implements State: the channels that have a file.
func (p *Files) PairingChannels(context.Context) ([]string, error) {
	entries, err := os.ReadDir(p.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pairing: list %s: %w", p.dir, err)
	}
	var out []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && e.Type().IsRegular() && CheckChannel(name) == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// loadLocked returns the cached state of channel, re-reading the file when
// its inode, mtime or size changed (another process wrote it). p.mu is held.
func (p *Files) loadLocked(channel string) (*fileState, error) {
	path := p.path(channel)
	cur := p.files[channel]
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cur == nil || cur.exists {
			cur = &fileState{}
			p.files[channel] = cur
		}
		return cur, nil
	case err != nil:
		return nil, fmt.Errorf("pairing: stat %s: %w", path, err)
	}
	if cur.current(st) {
		return cur, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pairing: read %s: %w", path, err)
	}
	var f pairingFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("pairing: decode %s: %w", path, err)
	}
	if f.Version > pairingVersion {
		return nil, fmt.Errorf("pairing: %s has format version %d; this gateway reads up to %d",
			path, f.Version, pairingVersion)
	}
	cur = &fileState{data: Data{Pending: f.Pending, Allowed: f.Allowed}, info: st, exists: true}
	p.files[channel] = cur
	return cur, nil
}

// path is channel's file; channel passed CheckChannel, so it is one
// file name inside p.dir.
func (p *Files) path(channel string) string {
	return filepath.Join(p.dir, channel+".json")
}

var _ State = (*Files)(nil)
