package gatewayd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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
