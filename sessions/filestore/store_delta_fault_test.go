package filestore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// TestChangeLogFailedFsyncLeavesNothing: a change whose change-log fsync
// failed is reported failed and is not in the file, and a later change
// stays readable even if the failed write-back left garbage on disk. On
// main the failed lines stayed in the file: the change its caller was told
// failed came back at the next read, and the next change was appended
// after them, so a crash that lost their write-back (bytes zeroed here)
// glued the garbage to the next line and lost an acknowledged change.
func TestChangeLogFailedFsyncLeavesNothing(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{CacheTTL: -1})
	s := mustStore(t, m, "main")
	ctx := context.Background()
	k := dmKey(t, "main", "1")
	mustBegin(t, s, k, sessions.Origin{})
	label := func(l string) error {
		_, err := s.Patch(ctx, k, func(e *sessions.Entry) error { e.Label = l; return nil })
		return err
	}
	if err := label("stored"); err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, s.deltaPath)
	if before == 0 {
		t.Fatal("the patch did not go to the change log")
	}
	syncDelta = func(*os.File) error { return &os.PathError{Op: "sync", Path: s.deltaPath, Err: syscall.EIO} }
	err := label("failed")
	syncDelta = (*os.File).Sync
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("patch whose fsync failed: %v, want EIO", err)
	}
	if got, _, _ := s.Get(k); got.Label != "stored" {
		t.Errorf("after the failed patch the label is %q, want %q (a change reported failed came back)", got.Label, "stored")
	}
	after := fileSize(t, s.deltaPath)
	if err := label("acknowledged"); err != nil {
		t.Fatal(err)
	}
	// The crash: what the failed fsync covered never reached the disk.
	b, err := os.ReadFile(s.deltaPath)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[before:after], bytes.Repeat([]byte{0}, int(after-before)))
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	if err := os.WriteFile(crashed+s.deltaPath[len(dir):], b, 0o600); err != nil {
		t.Fatal(err)
	}
	cs := mustStore(t, openTestManager(t, crashed, Options{CacheTTL: -1}), "main")
	if got, _, _ := cs.Get(k); got.Label != "acknowledged" {
		t.Errorf("after the crash the label is %q, want the acknowledged %q", got.Label, "acknowledged")
	}
}
