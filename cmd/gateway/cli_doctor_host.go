package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// The host checks stay in the CLI: file modes and free space are about the
// machine and cover every package's files under the state dir (pairing,
// channel cursors, the journal), not the stored sessions a backend owns; a
// PostgreSQL backend has neither.

// minFreeMiB is the free space below which doctor warns (the journal and
// the transcripts stop taking writes when the disk is full, SPEC §3.7);
// GATEWAY_DOCTOR_MIN_FREE_MB overrides it.
const minFreeMiB = 100

func minFree() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("GATEWAY_DOCTOR_MIN_FREE_MB"), 10, 64); err == nil {
		return v << 20
	}
	return minFreeMiB << 20
}

// checkHost runs the checks that are not about stored sessions.
func checkHost(stateDir string) ([]*problem, error) {
	out, err := checkPermissions(stateDir)
	if err != nil {
		return nil, err
	}
	disk, err := checkFreeSpace(stateDir)
	if err != nil {
		return nil, err
	}
	return append(out, disk...), nil
}

// checkFreeSpace reports low free space on the state dir's filesystem.
func checkFreeSpace(stateDir string) ([]*problem, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(stateDir, &st); err != nil {
		return nil, fmt.Errorf("doctor: free space of %s: %w", stateDir, err)
	}
	free := st.Bavail * uint64(st.Bsize)
	total := st.Blocks * uint64(st.Bsize)
	if free >= minFree() {
		return nil, nil
	}
	return []*problem{{Kind: kindLowDisk, Path: stateDir,
		Detail: fmt.Sprintf("%d MiB free of %d MiB: when the disk fills the gateway refuses new messages (503, /readyz fails) until space returns",
			free>>20, total>>20)}}, nil
}

// checkPermissions wants directories 0700 and files 0600 below the state
// directory (transcripts hold private conversations).
func checkPermissions(stateDir string) ([]*problem, error) {
	var out []*problem
	err := filepath.WalkDir(stateDir, func(path string, de fs.DirEntry, err error) error {
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
