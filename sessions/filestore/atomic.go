package filestore

import (
	"os"

	"github.com/gateway/gateway/internal/atomicfile"
)

// writeFileAtomic replaces path with data (0600) so that a crash leaves
// either the old or the new file (internal/atomicfile).
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o600)
}

// writeFileAtomicIfChanged skips the write when path already holds data.
func writeFileAtomicIfChanged(path string, data []byte) (bool, error) {
	return atomicfile.WriteFileIfChanged(path, data, 0o600)
}

// syncDir fsyncs a directory so a rename or create in it is durable.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// renameDurable renames old to new and fsyncs the directory.
func renameDurable(oldPath, newPath string) error { return atomicfile.Rename(oldPath, newPath) }

// mkdirPrivate creates dir and its parents with mode 0700.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
