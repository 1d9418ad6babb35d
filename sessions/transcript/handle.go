package transcript

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gateway/gateway/internal/atomicfile"
)

// handle is the part of an open transcript file that loading and
// appending use. The daemon's is an *os.File; the fuzz test's lives in
// memory, so each execution runs the same loader and writer without
// creating a file (see opener).
type handle interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
}

// opener opens the transcript at path for reading (write false: a missing
// file is (nil, nil)) or for appending (write true: created if missing).
type opener func(path string, write bool) (handle, error)

var _ handle = (*os.File)(nil)

// fileIdentity is a FileInfo that is not an os one (os.SameFile is false
// for those) and says itself whether another describes the same file.
type fileIdentity interface {
	SameFile(other os.FileInfo) bool
}

// syncDir fsyncs a directory (a variable for the test that a new
// transcript's directory entry is made durable).
var syncDir = atomicfile.SyncDir

// openOS is the opener of every File outside tests. A transcript it
// creates has its directory fsynced before it is returned: the appends'
// fsyncs make the file's bytes durable, not its name, and a power loss
// could otherwise leave a session whose appends were acknowledged with no
// file at all.
func openOS(path string, write bool) (handle, error) {
	if write {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syncDir(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("sync the directory of new transcript %s: %w", filepath.Base(path), err)
		}
		return f, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}
