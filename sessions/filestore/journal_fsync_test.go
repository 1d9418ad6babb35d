package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// lossyFile is a disk that loses a write-back: writes reach the file only
// at an fsync, and while fail is set the next fsync drops them and fails,
// as the kernel does when it cannot write dirty pages back (it reports
// that once; the pages are gone from the disk, and a later fsync succeeds).
// A restart reads what reached the file.
type lossyFile struct {
	*os.File
	mu      sync.Mutex // guards pending
	pending []byte
	fail    *atomic.Bool
}

func (f *lossyFile) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, b...)
	return len(b), nil
}

func (f *lossyFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail.CompareAndSwap(true, false) {
		f.pending = nil
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
	}
	if _, err := f.File.Write(f.pending); err != nil {
		return err
	}
	f.pending = nil
	return f.File.Sync()
}

func (f *lossyFile) Truncate(n int64) error {
	if err := f.Sync(); err != nil {
		return err
	}
	return f.File.Truncate(n)
}

// TestJournalFailedFsyncLosesNoAcknowledgedAccept: records accepted
// together whose one fsync fails are all told so, their redelivery is not
// acknowledged until the log holds them durably again, and after a
// restart every acknowledged record is pending. On main the second wait
// ran a new fsync (which succeeds) and acknowledged a line the failed one
// had lost, the redelivery was acknowledged as a duplicate at once, and
// the recovery only probed the log: the acknowledged records were gone
// after the restart.
func TestJournalFailedFsyncLosesNoAcknowledgedAccept(t *testing.T) {
	dir := t.TempDir()
	var fail atomic.Bool
	open := func(p string) (JournalFile, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		return &lossyFile{File: f, fail: &fail}, nil
	}
	ctx := context.Background()
	j := openJournalWith(dir, time.Now, zap.NewNop(), open)
	if j.openErr != nil {
		t.Fatal(j.openErr)
	}
	rec := func(id string) sessions.Record { return sessions.Record{ID: id, Payload: json.RawMessage(`{}`)} }
	if _, err := j.Accept(ctx, rec("a")); err != nil {
		t.Fatal(err)
	}
	_, waitB, err := j.AcceptDeferred(ctx, rec("b"))
	if err != nil {
		t.Fatal(err)
	}
	_, waitC, err := j.AcceptDeferred(ctx, rec("c"))
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if err := waitB(); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("wait whose fsync failed: %v, want ErrStorage", err)
	}
	if err := waitC(); !errors.Is(err, sessions.ErrStorage) {
		t.Errorf("wait for a line the failed fsync covered: %v, want ErrStorage", err)
	}
	// The sender redelivers c (its batch was not acknowledged).
	acked := false
	deadline := time.Now().Add(20 * time.Second)
	for !acked && time.Now().Before(deadline) {
		dup, err := j.Accept(ctx, rec("c"))
		switch {
		case err == nil && !dup:
			t.Fatal("the redelivery was not a duplicate of the pending record")
		case err == nil:
			acked = true
		case !errors.Is(err, sessions.ErrStorage):
			t.Fatalf("redelivery: %v", err)
		default:
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !acked {
		t.Fatal("the redelivery was never acknowledged: the journal did not recover")
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	j2 := openTestJournal(t, dir, nil)
	got := pendingIDs(t, j2)
	for _, want := range []string{"a/0/0", "c/0/0"} {
		if !slices.Contains(got, want) {
			t.Errorf("after a restart pending %v lacks the acknowledged %s", got, want)
		}
	}
}
