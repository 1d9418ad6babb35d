//go:build unix

package filestore

import (
	"os"
	"syscall"
)

// inodeOf is the inode number of the file fi describes (0 if unknown): a
// redo record applies only to the file it was written for, not to one
// that replaced it (doctor --fix rewrites a transcript atomically).
func inodeOf(fi os.FileInfo) uint64 {
	if fi == nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
