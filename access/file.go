package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/gofrs/flock"

	"github.com/gateway/gateway/internal/atomicfile"
)

// pairingFile is the on-disk form of one channel's pairing state.
type pairingFile struct {
	Version int        `json:"version"`
	Pending []Request  `json:"pending"`
	Allowed []Approval `json:"allowed"`
}

const pairingVersion = 1

// fileState caches one channel file with the stat it was read at.
type fileState struct {
	data pairingFile
	// info is the stat the data was read at; a write by rename always
	// changes the inode, so os.SameFile catches writes within one mtime tick.
	info   fs.FileInfo
	exists bool
}

func (f *fileState) current(st fs.FileInfo) bool {
	return f != nil && f.exists && os.SameFile(f.info, st) &&
		f.info.ModTime().Equal(st.ModTime()) && f.info.Size() == st.Size()
}

// loadLocked returns the cached state of channel, re-reading the file when
// its mtime or size changed (another process wrote it). s.mu is held.
func (s *PairingStore) loadLocked(channel string) (*fileState, error) {
	path := s.path(channel)
	cur := s.files[channel]
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cur == nil || cur.exists {
			cur = &fileState{data: pairingFile{Version: pairingVersion}}
			s.files[channel] = cur
		}
		return cur, nil
	case err != nil:
		return nil, fmt.Errorf("access: stat %s: %w", path, err)
	}
	if cur.current(st) {
		return cur, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("access: read %s: %w", path, err)
	}
	var d pairingFile
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("access: decode %s: %w", path, err)
	}
	cur = &fileState{data: d, info: st, exists: true}
	s.files[channel] = cur
	return cur, nil
}

// updateLocked runs fn on the current file content under the cross-process
// file lock and writes the result atomically when fn reports a change.
// s.mu is held.
func (s *PairingStore) updateLocked(channel string, fn func(*pairingFile) (bool, error)) error {
	path := s.path(channel)
	lk := flock.New(path + ".lock")
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.LockTimeout)
	defer cancel()
	ok, err := lk.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("access: lock %s: %w", path, errors.Join(err, errors.New("timed out")))
	}
	defer func() { _ = lk.Unlock() }()
	f, err := s.loadLocked(channel)
	if err != nil {
		return err
	}
	d := clonePairing(f.data)
	changed, err := fn(&d)
	if err != nil || !changed {
		return err
	}
	d.Version = pairingVersion
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("access: encode %s: %w", path, err)
	}
	if err := writeAtomic(path, append(b, '\n')); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("access: stat %s: %w", path, err)
	}
	s.files[channel] = &fileState{data: d, info: st, exists: true}
	return nil
}

func clonePairing(d pairingFile) pairingFile {
	return pairingFile{Version: d.Version,
		Pending: append([]Request(nil), d.Pending...), Allowed: append([]Approval(nil), d.Allowed...)}
}

// writeAtomic writes b to path (0600) unless it already holds b; a crash
// leaves the old or the new file (internal/atomicfile).
func writeAtomic(path string, b []byte) error {
	if _, err := atomicfile.WriteFileIfChanged(path, b, 0o600); err != nil {
		return fmt.Errorf("access: write %s: %w", path, err)
	}
	return nil
}
