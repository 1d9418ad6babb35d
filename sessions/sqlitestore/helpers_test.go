package sqlitestore_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions/sqlitestore"
)

// files remembers which database file each handle a conformance case got
// is on, so that a case's Share opens a second DB on the same file, as a
// second process would.
type files[T comparable] struct {
	mu    sync.Mutex
	paths map[T]string
}

// open returns a new DB on a file of its own, or on share's file when
// share is not the zero T; t.Cleanup closes it. now is its clock (nil:
// time.Now).
func (f *files[T]) open(t *testing.T, share T, now func() time.Time) (*sqlitestore.DB, string) {
	t.Helper()
	var zero T
	path := filepath.Join(t.TempDir(), sqlitestore.FileName)
	if share != zero {
		f.mu.Lock()
		path = f.paths[share]
		f.mu.Unlock()
	}
	db, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path, Now: now, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db, path
}

// keep records that handle h is on path.
func (f *files[T]) keep(h T, path string) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paths == nil {
		f.paths = map[T]string{}
	}
	f.paths[h] = path
	return h
}
