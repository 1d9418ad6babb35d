package transcript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
)

// syncFaultFile is an os file whose fsyncs run script in turn (the last
// one for every later call): a test blocks one and fails another, as a
// disk does that loses a write-back (Linux reports it once, then fsync
// succeeds again on the same file).
type syncFaultFile struct {
	*os.File
	next func() error
}

func (f *syncFaultFile) Sync() error {
	if err := f.next(); err != nil {
		return err
	}
	return f.File.Sync()
}

// TestFailedFsyncFailsEveryWriteItCovered: appends whose writes one
// failed fsync covered are all told it failed. On main the appender that
// waited for another's fsync ran its own after the failure, which
// succeeds (the kernel reports a lost write-back once), and was told its
// entry was durable though its bytes were in the range that failed.
func TestFailedFsyncFailsEveryWriteItCovered(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	var (
		mu      sync.Mutex
		calls   int
		entered = make(chan struct{})
		release = make(chan struct{})
	)
	next := func() error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch n {
		case 1: // the first append's fsync: held while the others write
			close(entered)
			<-release
			return nil
		case 2: // the fsync covering the two waiting appends
			return &os.PathError{Op: "sync", Path: path, Err: syscall.EIO}
		}
		return nil
	}
	open := func(p string, write bool) (handle, error) {
		h, err := openOS(p, write)
		if err != nil || h == nil {
			return h, err
		}
		return &syncFaultFile{File: h.(*os.File), next: next}, nil
	}
	written := make(chan struct{}, 4)
	tr := newTestTranscript(t, path, newMemLocker(), nil,
		func(f *File) { f.open = open },
		WithAppendHook(func([]*Node, int64) { written <- struct{}{} }))

	first := make(chan error, 1)
	go func() {
		_, err := tr.Append(ctx, user("first"))
		first <- err
	}()
	<-entered
	<-written // the first append's own write
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := tr.Append(ctx, user(fmt.Sprintf("covered %d", i)))
			errs <- err
		}()
	}
	<-written
	<-written
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first append: %v", err)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, syscall.EIO) {
			t.Errorf("an append whose write the failed fsync covered returned %v, want the fsync's EIO", err)
		}
	}
	// The failure is not sticky: a write after it is fsynced anew.
	if _, err := tr.Append(ctx, user("after")); err != nil {
		t.Errorf("append after the failure: %v", err)
	}
}
