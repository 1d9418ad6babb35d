// Package mediastore keeps the files of outgoing replies (issue 23): the
// bytes a reply's photos, documents and voice notes are sent from, stored
// durably before the reply enters the outbox so a restart can finish it.
//
// Files are content-addressed: <dir>/<first two hex digits>/<sha256 hex>,
// files 0600 and directories 0700. A name is always a SHA-256 the store
// computed itself; Open refuses anything that is not 64 lower-case hex
// digits, so nothing from a chat or a model ever becomes a path. Put writes
// a temporary file, fsyncs it and renames it into place (internal/atomicfile),
// so a crash never leaves a torn file under a content's name. Storing the
// same content twice keeps one file.
//
// A Store is safe for concurrent use by goroutines and processes: every
// write goes to its own temporary file and the rename is atomic.
package mediastore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gateway/gateway/internal/atomicfile"
)

// ErrNotFound is returned by Open for content the store does not hold.
var ErrNotFound = errors.New("media not found")

// Store is a content-addressed directory of files.
type Store struct {
	dir string
}

// New returns the store kept in dir (created on first Put).
func New(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Valid reports whether sum may name content of the store: 64 lower-case
// hex digits.
func Valid(sum string) bool {
	if len(sum) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(sum); i++ {
		c := sum[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Store) path(sum string) string {
	return filepath.Join(s.dir, sum[:2], sum)
}

// Put stores what r yields and returns its SHA-256 (hex) and size. r is
// read to its end; callers bound it (channels.LimitedReader) when its size
// is not theirs to trust.
func (s *Store) Put(r io.Reader) (sum string, size int64, err error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", 0, fmt.Errorf("mediastore: put: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".part-*") // 0600
	if err != nil {
		return "", 0, fmt.Errorf("mediastore: put: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := sha256.New()
	size, err = io.Copy(io.MultiWriter(tmp, h), r)
	if err == nil {
		// Synced before the rename: a crash must never leave a torn
		// file under the content's hash.
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, fmt.Errorf("mediastore: put: %w", err)
	}
	sum = hex.EncodeToString(h.Sum(nil))
	path := s.path(sum)
	if fi, err := os.Stat(path); err == nil && fi.Size() == size {
		// Already held: touched so Prune counts from this use.
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return sum, size, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", 0, fmt.Errorf("mediastore: put: %w", err)
	}
	if err := atomicfile.Rename(tmp.Name(), path); err != nil {
		return "", 0, fmt.Errorf("mediastore: put: %w", err)
	}
	return sum, size, nil
}

// Open opens the content named sum. An invalid name is an error naming
// it; content the store lacks is ErrNotFound.
func (s *Store) Open(sum string) (*os.File, error) {
	if !Valid(sum) {
		return nil, fmt.Errorf("mediastore: open: %q is not a SHA-256 in hex", sum)
	}
	f, err := os.Open(s.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("mediastore: open %s: %w", sum[:12], ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("mediastore: open: %w", err)
	}
	return f, nil
}

// Has reports whether the store holds sum.
func (s *Store) Has(sum string) bool {
	if !Valid(sum) {
		return false
	}
	_, err := os.Stat(s.path(sum))
	return err == nil
}

// Prune removes content last written before cutoff (and temporary files
// a crash left) and returns how many files went. Callers keep cutoff far
// behind the oldest reply the outbox may still resend.
func (s *Store) Prune(cutoff time.Time) (int, error) {
	n := 0
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		if fi.ModTime().Before(cutoff) {
			if err := os.Remove(path); err == nil {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("mediastore: prune: %w", err)
	}
	return n, nil
}
