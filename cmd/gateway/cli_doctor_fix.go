package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/gateway/gateway/internal/atomicfile"
	"github.com/gateway/gateway/sessions"
)

// manager opens the sessions manager on first use (for the store lock).
func (d *doctor) manager() (*sessions.Manager, error) {
	if d.mgr == nil {
		m, err := openSessions(d.cfg)
		if err != nil {
			return nil, err
		}
		d.mgr = m
	}
	return d.mgr, nil
}

// editIndex changes agent's sessions.json under the store lock (the same
// flock the daemon takes), re-reading it first, and writes it atomically.
func (d *doctor) editIndex(ctx context.Context, agent, indexPath string, fn func(map[string]sessions.Entry)) error {
	m, err := d.manager()
	if err != nil {
		return err
	}
	st, err := m.Store(agent)
	if err != nil {
		return err
	}
	_, unlock, err := st.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	idx, err := readIndex(indexPath)
	if err != nil {
		return fmt.Errorf("read %s: %w", indexPath, err)
	}
	before, err := encodeIndex(idx)
	if err != nil {
		return err
	}
	fn(idx)
	after, err := encodeIndex(idx)
	if err != nil {
		return err
	}
	if bytes.Equal(before, after) {
		return nil
	}
	if err := writeAtomic(indexPath, after); err != nil {
		return err
	}
	// The written index holds the change log's entries: empty the log.
	if err := os.Truncate(filepath.Join(filepath.Dir(indexPath), sessions.ChangeLogName), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("empty the change log: %w", err)
	}
	return nil
}

// quarantineIndex keeps an unreadable index as sessions.json.corrupt.<ts>;
// the orphan fixes that follow rebuild the entries from the transcripts.
func (d *doctor) quarantineIndex(ctx context.Context, agent, indexPath string) error {
	m, err := d.manager()
	if err != nil {
		return err
	}
	st, err := m.Store(agent)
	if err != nil {
		return err
	}
	_, unlock, err := st.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := readIndex(indexPath); err == nil {
		return nil // repaired meanwhile
	}
	return renameSync(indexPath, indexPath+".corrupt."+d.now.UTC().Format("20060102T150405Z"))
}

// encodeIndex renders the index like the sessions package: one entry per
// line, keys sorted.
func encodeIndex(idx map[string]sessions.Entry) ([]byte, error) {
	keys := make([]string, 0, len(idx))
	for k := range idx {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		eb, err := json.Marshal(idx[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(eb)
		if i < len(keys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// writeAtomic replaces path (0600) so a crash leaves the old or the new
// file, never a torn one (internal/atomicfile).
func writeAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o600)
}

// checkLocks finds lock files whose metadata outlived their holder and
// locks held for longer than the max hold time.
func (d *doctor) checkLocks() ([]*problem, error) {
	var out []*problem
	err := filepath.WalkDir(d.cfg.StateDir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.Type().IsRegular() || !strings.HasSuffix(path, ".lock") {
			return nil
		}
		info, rerr := sessions.ReadLockInfo(path)
		if rerr == nil && info.PID == 0 {
			return nil // released: empty metadata
		}
		fl := flock.New(path)
		got, err := fl.TryLock()
		if err != nil {
			return fmt.Errorf("doctor: lock %s: %w", path, err)
		}
		if got {
			_ = fl.Unlock()
			p := &problem{Kind: kindStaleLock, Path: path,
				Detail: "not held, but holds metadata of a dead holder (" + describeHolder(info, rerr) + ")",
				Fix:    "truncate the metadata (the file stays)"}
			p.fix = func(ctx context.Context) error { return truncateIfFree(path) }
			out = append(out, p)
			return nil
		}
		if rerr == nil && !info.CreatedAt.IsZero() && d.now.Sub(info.CreatedAt) > sessions.DefaultMaxHold {
			out = append(out, &problem{Kind: kindLongHeldLock, Path: path,
				Detail: "held for " + d.now.Sub(info.CreatedAt).Round(time.Second).String() + " by " + describeHolder(info, nil) +
					"; its owner's watchdog should release it (restart that process if it does not)"})
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

func describeHolder(info sessions.LockInfo, err error) string {
	if err != nil {
		return "unreadable metadata"
	}
	return fmt.Sprintf("pid %d on %q since %s", info.PID, info.Host, info.CreatedAt.Format(time.RFC3339))
}

// truncateIfFree truncates a lock file's metadata while holding its flock,
// so a live holder is never disturbed.
func truncateIfFree(path string) error {
	fl := flock.New(path)
	got, err := fl.TryLock()
	if err != nil {
		return err
	}
	if !got {
		return errors.New("the lock was taken meanwhile; left alone")
	}
	defer fl.Unlock()
	return os.Truncate(path, 0)
}

// checkPermissions wants directories 0700 and files 0600 below the state
// directory (transcripts hold private conversations).
func (d *doctor) checkPermissions() ([]*problem, error) {
	var out []*problem
	err := filepath.WalkDir(d.cfg.StateDir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var want fs.FileMode
		switch {
		case de.IsDir():
			want = 0o700
		case de.Type().IsRegular():
			want = 0o600
		default:
			return nil // symlinks, sockets: not ours
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		if got := fi.Mode().Perm(); got != want {
			p := &problem{Kind: kindPermissions, Path: path,
				Detail: fmt.Sprintf("mode %04o, want %04o", got, want), Fix: fmt.Sprintf("chmod %04o", want)}
			p.fix = func(ctx context.Context) error { return os.Chmod(path, want) }
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("doctor: permissions: %w", err)
	}
	return out, nil
}
