package transcript

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"time"
)

// memFS holds transcript files in memory, so a test (the fuzz target) runs
// File's loader and writer without touching the disk. Each write bumps the
// file's modification time, which is what makes File re-read it.
type memFS struct {
	mu    sync.Mutex // guards files
	files map[string]*memData
}

type memData struct {
	mu   sync.Mutex // guards b and mod
	b    []byte
	mod  int64
	name string
}

func newMemFS() *memFS { return &memFS{files: make(map[string]*memData)} }

// put replaces the file at path with b.
func (m *memFS) put(path string, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[path] = &memData{b: append([]byte(nil), b...), name: path}
}

// open is an opener.
func (m *memFS) open(path string, write bool) (handle, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.files[path]
	if !ok {
		if !write {
			return nil, nil
		}
		d = &memData{name: path}
		m.files[path] = d
	}
	return &memFile{d: d}, nil
}

// memFile is one open memData; closing it changes nothing.
type memFile struct{ d *memData }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.d.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.d.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.d.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.d.name, Err: fs.ErrInvalid}
	}
	if end := off + int64(len(p)); end > int64(len(f.d.b)) {
		f.d.b = append(f.d.b, make([]byte, end-int64(len(f.d.b)))...)
	}
	copy(f.d.b[off:], p)
	f.d.mod++
	return len(p), nil
}

func (f *memFile) Truncate(size int64) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.d.name, Err: fs.ErrInvalid}
	}
	if size <= int64(len(f.d.b)) {
		f.d.b = f.d.b[:size]
	} else {
		f.d.b = append(f.d.b, make([]byte, size-int64(len(f.d.b)))...)
	}
	f.d.mod++
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return memInfo{name: f.d.name, size: int64(len(f.d.b)), mod: time.Unix(0, f.d.mod), d: f.d}, nil
}

func (f *memFile) Sync() error  { return nil }
func (f *memFile) Close() error { return nil }

// memInfo is a memFile's FileInfo; d identifies the file (fileIdentity),
// so a File over memFS keeps its parsed state while the file is unchanged,
// as it does over a real file.
type memInfo struct {
	name string
	size int64
	mod  time.Time
	d    *memData
}

func (i memInfo) SameFile(other os.FileInfo) bool {
	o, ok := other.(memInfo)
	return ok && i.d != nil && o.d == i.d
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o600 }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// stat is a statter.
func (m *memFS) stat(path string) (os.FileInfo, error) {
	m.mu.Lock()
	d, ok := m.files[path]
	m.mu.Unlock()
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist}
	}
	return (&memFile{d: d}).Stat()
}

// withMemFS makes a File open and stat its path in m.
func withMemFS(m *memFS) Option { return func(t *File) { t.open, t.stat = m.open, m.stat } }
