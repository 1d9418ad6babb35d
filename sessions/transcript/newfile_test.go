package transcript

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewTranscriptSyncsItsDirectory: the append that creates a
// transcript fsyncs the directory (the file's name is durable, not only
// its bytes) before it reports success; appends to an existing file do
// not; a failing directory fsync fails the append with an error that
// says so.
func TestNewTranscriptSyncsItsDirectory(t *testing.T) {
	var synced []string
	var fail error
	old := syncDir
	syncDir = func(dir string) error { synced = append(synced, dir); return fail }
	t.Cleanup(func() { syncDir = old })

	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	if _, err := tr.Append(ctx, user("first")); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != filepath.Dir(path) {
		t.Fatalf("directory syncs after creating %s: %v, want [%s]", path, synced, filepath.Dir(path))
	}
	again := newTestTranscript(t, path, newMemLocker(), nil)
	if _, err := again.Append(ctx, user("second")); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 {
		t.Fatalf("an existing transcript's append synced its directory: %v", synced)
	}

	fail = errors.New("disk gone")
	other := newTestTranscript(t, filepath.Join(filepath.Dir(path), "new.jsonl"), newMemLocker(), nil)
	_, err := other.Append(ctx, user("x"))
	if err == nil || !strings.Contains(err.Error(), "sync the directory of new transcript new.jsonl") || !errors.Is(err, fail) {
		t.Fatalf("append with a failing directory sync: %v", err)
	}
}
