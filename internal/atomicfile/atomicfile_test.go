package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "two" {
		t.Fatalf("content %q %v", b, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	wrote, err := WriteFileIfChanged(p, []byte("two"), 0o600)
	if err != nil || wrote {
		t.Fatalf("unchanged content rewritten: %v %v", wrote, err)
	}
	if wrote, err = WriteFileIfChanged(p, []byte("three"), 0o600); err != nil || !wrote {
		t.Fatalf("changed content not written: %v %v", wrote, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

// TestWriteFileFailureKeepsOld: a write that cannot complete (the target
// is a directory, so the rename fails) leaves the old state and no
// temporary file, and the error names the file.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "busy")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(target, []byte("new"), 0o600)
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("err = %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary file left: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "x")); string(b) != "keep" {
		t.Fatal("old state damaged")
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func TestRename(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatal(err)
	}
	if err := Rename(a, b); err == nil {
		t.Fatal("renaming a missing file succeeded")
	}
}
