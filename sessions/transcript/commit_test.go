package transcript

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
)

// fakeCommitter records what a File hands its committer.
type fakeCommitter struct {
	accept  bool
	commits []commitCall
	synced  []int64
	waited  int
}

type commitCall struct {
	at int64
	b  []byte
}

func (c *fakeCommitter) Commit(_ string, _ os.FileInfo, _ io.ReaderAt, at int64, b []byte) (func() error, bool) {
	c.commits = append(c.commits, commitCall{at, bytes.Clone(b)})
	if !c.accept {
		return nil, false
	}
	return func() error { c.waited++; return nil }, true
}

func (c *fakeCommitter) Synced(_ string, end int64) { c.synced = append(c.synced, end) }

// TestCommitterSeesDurableAppendsOnly: a durable append hands the bytes it
// wrote, at their offset, to the committer and waits on it; a lazy append
// does not; a declined commit fsyncs the file and reports how far it is
// durable.
func TestCommitterSeesDurableAppendsOnly(t *testing.T) {
	ctx := context.Background()
	for _, accept := range []bool{true, false} {
		c := &fakeCommitter{accept: accept}
		path := tempPath(t)
		tr := newTestTranscript(t, path, newMemLocker(), nil, WithCommitter(c))
		if _, err := tr.AppendLazy(ctx, user("q")); err != nil {
			t.Fatal(err)
		}
		lazyEnd := fileSize(t, path)
		if _, err := tr.Append(ctx, assistantText("a")); err != nil {
			t.Fatal(err)
		}
		whole, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.commits) != 1 {
			t.Fatalf("accept %v: %d commits, want 1 (the durable append's)", accept, len(c.commits))
		}
		if got := c.commits[0]; got.at != lazyEnd || !bytes.Equal(got.b, whole[lazyEnd:]) {
			t.Fatalf("accept %v: commit at %d of %q, want at %d of %q", accept, got.at, got.b, lazyEnd, whole[lazyEnd:])
		}
		switch {
		case accept && (c.waited != 1 || len(c.synced) != 0):
			t.Fatalf("accepted: waited %d, synced %v; want one wait, no fsync", c.waited, c.synced)
		case !accept && (c.waited != 0 || len(c.synced) != 1 || c.synced[0] != int64(len(whole))):
			t.Fatalf("declined: waited %d, synced %v; want the fsync to report %d", c.waited, c.synced, len(whole))
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
