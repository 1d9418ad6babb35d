package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A writable File keeps its transcript open between operations: opening a
// file costs seven system calls (open, four fcntl, epoll_ctl, close) where
// checking that the kept one is still the file at the path costs one stat.
// The stat is what makes keeping it safe: a transcript renamed (a reset or
// a delete archives it, a repair moves it aside) or replaced by anyone, in
// this process or another, is no longer the file at the path, so the kept
// handle is dropped and the path opened again, exactly as if every
// operation had opened it. A write therefore never goes into a file that
// was renamed before the operation began. Handles are counted: one
// replaced or closed while an append still writes or fsyncs through it is
// closed when that append is done.

// statter reports the file at path (os.Stat; memFS's in tests).
type statter func(path string) (os.FileInfo, error)

// openFile is an open transcript shared by a File's operations.
type openFile struct {
	h     handle
	id    os.FileInfo // h's own FileInfo when opened: which file it is
	write bool        // opened for appending
	refs  int         // operations using h; guarded by File.hmu
	done  bool        // no longer kept: closed when refs drops to 0
}

// acquire returns the transcript file opened for appending (write: created
// if missing) or for reading (nil when missing), and the file's current
// FileInfo (nil if unknown: the caller stats the handle). Pass the result
// to release.
func (t *File) acquire(write bool) (*openFile, os.FileInfo, error) {
	if t.lock == nil {
		// Read-only use (LoadFile, ReadHistory, archives): one-shot Files
		// that are never closed keep nothing open.
		return t.openFresh(write, true)
	}
	fi, err := t.stat(t.path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return nil, nil, fmt.Errorf("stat: %w", err)
	}
	t.hmu.Lock()
	if cur := t.cur; cur != nil {
		switch {
		case missing || !sameFile(cur.id, fi):
			t.retireLocked() // renamed, removed or replaced: never written again
		case cur.write || !write:
			cur.refs++
			t.hmu.Unlock()
			return cur, fi, nil
		}
	}
	closed := t.closed
	t.hmu.Unlock()
	if missing && !write {
		return nil, nil, nil
	}
	return t.openFresh(write, closed)
}

// openFresh opens the path; the handle is kept for later operations unless
// once is set or the File was closed meanwhile.
func (t *File) openFresh(write, once bool) (*openFile, os.FileInfo, error) {
	h, err := t.open(t.path, write)
	if err != nil || h == nil {
		return nil, nil, err
	}
	id, err := h.Stat()
	if err != nil {
		_ = h.Close()
		return nil, nil, fmt.Errorf("stat: %w", err)
	}
	of := &openFile{h: h, id: id, write: write, refs: 1, done: once}
	if once {
		return of, id, nil
	}
	t.hmu.Lock()
	defer t.hmu.Unlock()
	if t.closed {
		of.done = true
		return of, id, nil
	}
	if t.cur != nil {
		t.retireLocked()
	}
	t.cur = of
	return of, id, nil
}

// release ends an operation's use of of (nil: nothing was opened).
func (t *File) release(of *openFile) {
	if of == nil {
		return
	}
	t.hmu.Lock()
	of.refs--
	last := of.done && of.refs == 0
	t.hmu.Unlock()
	if last {
		_ = of.h.Close()
	}
}

// retireLocked stops keeping t.cur; it is closed now or by its last user.
func (t *File) retireLocked() {
	cur := t.cur
	t.cur = nil
	cur.done = true
	if cur.refs == 0 {
		_ = cur.h.Close()
	}
}

// Close closes the file the transcript keeps open (an operation still
// using it closes it when done). The File stays usable and opens its file
// for each operation from then on. The files backend closes a File it no
// longer hands out (evicted from its cache, archived, at shutdown).
func (t *File) Close() error {
	t.hmu.Lock()
	defer t.hmu.Unlock()
	t.closed = true
	if t.cur != nil {
		t.retireLocked()
	}
	return nil
}

// kept reports whether the File holds its file open (tests).
func (t *File) kept() bool {
	t.hmu.Lock()
	defer t.hmu.Unlock()
	return t.cur != nil
}

// sameFile reports whether a and b describe the same file (not whether it
// changed in between).
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return false
	}
	if id, ok := a.(fileIdentity); ok {
		return id.SameFile(b)
	}
	return os.SameFile(a, b)
}
