package gatewayd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// TestChainLinks: the links a path resolves through, relative and
// absolute, in a directory and at the file; a loop ends; a missing part
// ends the chain where it is.
func TestChainLinks(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "releases", "2", "..data_1"), 0o700))
	must(os.WriteFile(filepath.Join(dir, "releases", "2", "..data_1", "gateway.yaml"), nil, 0o600))
	must(os.Symlink("..data_1", filepath.Join(dir, "releases", "2", "..data")))
	must(os.Symlink(filepath.Join("..data", "gateway.yaml"), filepath.Join(dir, "releases", "2", "gateway.yaml")))
	must(os.Symlink(filepath.Join(dir, "releases", "2"), filepath.Join(dir, "current"))) // absolute
	must(os.Symlink("loop", filepath.Join(dir, "loop")))

	got := chainLinks(filepath.Join(dir, "current", "gateway.yaml"))
	want := []string{
		filepath.Join(dir, "current"),
		filepath.Join(dir, "releases", "2", "gateway.yaml"),
		filepath.Join(dir, "releases", "2", "..data"),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("chainLinks = %v\nwant %v", got, want)
	}
	if got := chainLinks(filepath.Join(dir, "loop", "x")); len(got) != maxLinks {
		t.Fatalf("a loop gave %d links, want %d", len(got), maxLinks)
	}
	if got := chainLinks(filepath.Join(dir, "current", "missing", "x")); !slices.Equal(got, want[:1]) {
		t.Fatalf("a missing part gave %v", got)
	}
}

// TestConfigWatchDirectoryBackBeforeAncestorWatched: the config's
// directory deleted and made again in the instant between the watch
// finding it gone and its ancestor's watch being added (the make sends
// that watch no event) is still found back, and the next edit of the file
// is seen. (The watch stayed on the ancestor, waiting for a directory
// that was already there: no edit was read again until a restart; the
// hot-reload tests failed so under load in CI.)
func TestConfigWatchDirectoryBackBeforeAncestorWatched(t *testing.T) {
	etc, path, w, c := watchedConfig(t)
	came := false
	c.testLooked = func(found bool) {
		if came || found {
			return
		}
		came = true
		if err := os.Mkdir(etc, 0o700); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(path, []byte("a: 2\n"), 0o600); err != nil {
			t.Error(err)
		}
	}
	if err := os.RemoveAll(etc); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for !came || c.lost {
		select {
		case ev := <-w.Events:
			c.touches(ev)
		case err := <-w.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("the directory made again was never found back (lost %v, watching %v)", c.lost, w.WatchList())
		}
	}
	if err := os.WriteFile(path, []byte("a: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-w.Events:
			if c.touches(ev) && ev.Name == path && ev.Has(fsnotify.Write) {
				return
			}
		case err := <-w.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("the edit in the directory made again was not seen (watching %v)", w.WatchList())
		}
	}
}

// TestConfigWatchDirectoryReplacedEndNotReported: a config directory
// removed and made again whose old watch's end is reported late, or not
// at all, is found replaced at the first event naming the file, and the
// next edit in the new directory is seen. (The watch stayed on the
// removed directory until its end was reported: an edit in between, or
// every edit if the report never came, was not read.)
func TestConfigWatchDirectoryReplacedEndNotReported(t *testing.T) {
	etc, path, w, c := watchedConfig(t)
	if err := os.RemoveAll(etc); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(etc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file's removal, as the old directory's watch reports it.
	if !c.touches(fsnotify.Event{Name: path, Op: fsnotify.Remove}) {
		t.Fatal("the file's removal was not taken as a change")
	}
	if err := os.WriteFile(path, []byte("a: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-w.Events:
			if ev.Name != path {
				continue // the old directory's end: not reported, as when it comes late
			}
			if c.touches(ev) && ev.Has(fsnotify.Write) {
				return
			}
		case err := <-w.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("the edit in the directory made again was not seen (watching %v)", w.WatchList())
		}
	}
}

// TestConfigWatchDirectoryGoneBeforeItsWatch: the config's directory
// removed in the instant between the watch finding it there and moving
// its watches (as a deployment's rm -r does: the file's removal is
// reported, then the directory goes) is found gone, its ancestor watched,
// and found back when it is made again: the next edit is seen. (The watch
// on it was dropped as if it were not wanted, nothing watched its
// ancestor, and the directory's end was never reported: hot reload
// stopped until a restart; TestHotReloadConfigDirectoryReplaced failed so
// in CI.)
func TestConfigWatchDirectoryGoneBeforeItsWatch(t *testing.T) {
	etc, path, w, c := watchedConfig(t)
	gone := false
	c.testLooked = func(found bool) {
		if gone || !found {
			return
		}
		gone = true
		if err := os.Remove(etc); err != nil { // empty now
			t.Error(err)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	next := func() fsnotify.Event {
		t.Helper()
		select {
		case ev := <-w.Events:
			return ev
		case err := <-w.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("the directory made again was not watched (lost %v, watching %v)", c.lost, w.WatchList())
		}
		return fsnotify.Event{}
	}
	for !gone {
		c.touches(next()) // the file's removal: the directory goes during its pass
	}
	if err := os.Mkdir(etc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ok := c.watched[etc]; c.lost || !ok; _, ok = c.watched[etc] {
		c.touches(next())
	}
	if err := os.WriteFile(path, []byte("a: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		if ev := next(); c.touches(ev) && ev.Name == path && ev.Has(fsnotify.Write) {
			return
		}
	}
}

// watchedConfig makes <tmp>/etc/gateway.yaml and a configWatch of it on a
// real fsnotify watcher (closed at the test's end).
func watchedConfig(t *testing.T) (etc, path string, w *fsnotify.Watcher, c *configWatch) {
	t.Helper()
	etc = filepath.Join(t.TempDir(), "etc")
	path = filepath.Join(etc, "gateway.yaml")
	if err := os.Mkdir(etc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if c, err = newConfigWatch(w, path, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	return etc, path, w, c
}
