package transcript

import (
	"errors"
	"io"
	"io/fs"
	"os"
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

// openOS is the opener of every File outside tests.
func openOS(path string, write bool) (handle, error) {
	if write {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
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
