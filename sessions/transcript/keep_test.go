package transcript

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fileText is the content of path, "" if it is missing.
func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestKeptFileRenamedIsNeverWritten: a transcript archived (renamed) while
// the File holds it open gets no later append; the append goes to a new
// file at the path, as it did when every append opened the path.
func TestKeptFileRenamedIsNeverWritten(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	t.Cleanup(func() { _ = tr.Close() })
	if _, err := tr.Append(ctx, user("before the reset")); err != nil {
		t.Fatal(err)
	}
	if !tr.kept() {
		t.Fatal("the transcript is not kept open after an append")
	}
	archived := path + ".reset.1"
	if err := os.Rename(path, archived); err != nil {
		t.Fatal(err)
	}
	before := fileText(t, archived)

	if _, err := tr.Append(ctx, user("after the reset")); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, archived); got != before {
		t.Fatalf("the archived file was written to:\n%s", got)
	}
	now := fileText(t, path)
	if !strings.Contains(now, "after the reset") || strings.Contains(now, "before the reset") {
		t.Fatalf("the file at the path holds:\n%s", now)
	}
	c, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:after the reset"}, summarize(c.Messages)); d != "" {
		t.Errorf("context after the reset (-want +got):\n%s", d)
	}
}

// TestKeptFileReplacedIsReread: a file put at the path by someone else
// (another process's rename over it) is what the next read and append see.
func TestKeptFileReplacedIsReread(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	lock := newMemLocker()
	tr := newTestTranscript(t, path, lock, nil)
	t.Cleanup(func() { _ = tr.Close() })
	if _, err := tr.Append(ctx, user("old file")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Context(ctx); err != nil {
		t.Fatal(err)
	}

	// Another writer builds a file elsewhere and renames it over the path.
	other := path + ".new"
	ow := newTestTranscript(t, other, lock, nil)
	if _, err := ow.Append(ctx, user("new file")); err != nil {
		t.Fatal(err)
	}
	_ = ow.Close()
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}

	c, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:new file"}, summarize(c.Messages)); d != "" {
		t.Errorf("context after the replacement (-want +got):\n%s", d)
	}
	if _, err := tr.Append(ctx, assistantText("answer")); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, path); !strings.Contains(got, "answer") || strings.Contains(got, "old file") {
		t.Errorf("the file at the path holds:\n%s", got)
	}
}

// TestClosedFileKeepsNothingOpen: after Close a File still works, opening
// its file for each operation, and holds no descriptor between them.
func TestClosedFileKeepsNothingOpen(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	if _, err := tr.Append(ctx, user("one")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if tr.kept() {
		t.Fatal("Close left the file open")
	}
	if _, err := tr.Append(ctx, assistantText("two")); err != nil {
		t.Fatal(err)
	}
	c, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tr.kept() {
		t.Fatal("a closed transcript kept its file open again")
	}
	if d := cmp.Diff([]string{"user:one", "assistant:two"}, summarize(c.Messages)); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
}

// TestHandleInUseOutlivesItsRetirement: a kept file that is closed or
// replaced while an append still writes or fsyncs through it stays open
// until that append releases it, then is closed.
func TestHandleInUseOutlivesItsRetirement(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	if _, err := tr.Append(ctx, user("one")); err != nil {
		t.Fatal(err)
	}

	// Replaced: the file is renamed away while an append holds it.
	held, _, err := tr.acquire(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".deleted.1"); err != nil {
		t.Fatal(err)
	}
	next, _, err := tr.acquire(true)
	if err != nil {
		t.Fatal(err)
	}
	if next == held {
		t.Fatal("the renamed file was handed out again")
	}
	if err := held.h.Sync(); err != nil {
		t.Fatalf("a retired handle in use was closed under its user: %v", err)
	}
	tr.release(held)
	if err := held.h.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a retired handle stayed open after its last use: %v", err)
	}

	// Closed: Close while next is in use.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := next.h.Sync(); err != nil {
		t.Fatalf("Close closed a handle in use: %v", err)
	}
	tr.release(next)
	if err := next.h.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a closed File's handle stayed open after its last use: %v", err)
	}
}
