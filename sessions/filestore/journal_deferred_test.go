package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// TestJournalAcceptDeferredSharesOneFsync (issue 21): the accepts of one
// batch are written at once and made durable by one fsync, which the
// batch's waits share; a restart finds every one of them pending, and a
// redelivery of one is a duplicate.
func TestJournalAcceptDeferredSharesOneFsync(t *testing.T) {
	dir := t.TempDir()
	j := openTestJournal(t, dir, time.Now)
	ctx := context.Background()
	before := j.fsyncs.Load()
	var waits []func() error
	var ids []string
	for i := range 10 {
		id := fmt.Sprintf("u%d", i)
		dup, wait, err := j.AcceptDeferred(ctx, sessions.Record{ID: id, Payload: json.RawMessage(`{}`)})
		if err != nil || dup {
			t.Fatalf("AcceptDeferred %s: dup %v, %v", id, dup, err)
		}
		waits, ids = append(waits, wait), append(ids, id)
	}
	if got := heldIDs(j); !slices.Equal(got, ids) {
		t.Fatalf("held before the waits: %v, want %v", got, ids)
	}
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	if n := j.fsyncs.Load() - before; n != 1 {
		t.Errorf("a batch of 10 deferred accepts took %d fsyncs, want 1", n)
	}
	dup, wait, err := j.AcceptDeferred(ctx, sessions.Record{ID: "u3", Payload: json.RawMessage(`{}`)})
	if err != nil || !dup || wait() != nil {
		t.Fatalf("redelivery of u3: dup %v, %v", dup, err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	j2 := openTestJournal(t, dir, time.Now)
	want := make([]string, len(ids))
	for i, id := range ids {
		want[i] = id + "/0/0"
	}
	if got := pendingIDs(t, j2); !slices.Equal(got, want) {
		t.Fatalf("pending after a restart: %v, want %v", got, ids)
	}
}

// syncFailFile fails fsyncs while failing is set.
type syncFailFile struct {
	*os.File
	failing *atomic.Bool
}

func (f syncFailFile) Sync() error {
	if f.failing.Load() {
		return &fs.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestJournalAcceptDeferredFailedWaitKeepsRecord: when the fsync a
// deferred accept waits for fails, the wait reports ErrStorage (the batch
// is not acknowledged) but the record stays pending, as the caller runs it
// already: the sender's redelivery is a duplicate, not a second run.
func TestJournalAcceptDeferredFailedWaitKeepsRecord(t *testing.T) {
	var failing atomic.Bool
	open := func(p string) (JournalFile, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		return syncFailFile{File: f, failing: &failing}, nil
	}
	j := openJournalWith(t.TempDir(), time.Now, zap.NewNop(), open)
	if j.openErr != nil {
		t.Fatal(j.openErr)
	}
	t.Cleanup(func() { _ = j.close() })
	ctx := context.Background()
	failing.Store(true)
	dup, wait, err := j.AcceptDeferred(ctx, sessions.Record{ID: "m", Payload: json.RawMessage(`{}`)})
	if err != nil || dup {
		t.Fatalf("AcceptDeferred: dup %v, %v", dup, err)
	}
	if err := wait(); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("wait with fsync failing: %v, want ErrStorage", err)
	}
	if got := heldIDs(j); !slices.Equal(got, []string{"m"}) {
		t.Fatalf("held after the failed wait: %v, want [m]", got)
	}
	failing.Store(false)
	// The line the failed fsync covered is durable once the journal has
	// rewritten its log (recover, within journalRetryEvery); until then
	// the redelivery's wait fails too (TestJournalFailedFsyncLosesNoAcknowledgedAccept).
	deadline := time.Now().Add(20 * time.Second)
	for j.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatal("journal did not recover once fsync worked")
		}
		time.Sleep(20 * time.Millisecond)
	}
	dup, wait, err = j.AcceptDeferred(ctx, sessions.Record{ID: "m", Payload: json.RawMessage(`{}`)})
	if err != nil || !dup {
		t.Fatalf("redelivery: dup %v, %v; want a duplicate", dup, err)
	}
	if err := wait(); err != nil {
		t.Fatalf("redelivery's wait once the journal recovered: %v", err)
	}
}

// heldIDs are the ids of the records j holds as pending (its own
// included, which Pending leaves out), sorted.
func heldIDs(j *Journal) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ids []string
	for id := range j.recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
