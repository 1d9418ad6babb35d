package mediastore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPutOpen(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "out"))
	sum, n, err := s.Put(strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 || sum != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("Put = %s, %d", sum, n)
	}
	sum2, _, err := s.Put(strings.NewReader("hello"))
	if err != nil || sum2 != sum {
		t.Fatalf("second Put = %s, %v", sum2, err)
	}
	f, err := s.Open(sum)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, _ := io.ReadAll(f)
	if !bytes.Equal(got, []byte("hello")) {
		t.Fatalf("content %q", got)
	}
	fi, _ := f.Stat()
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(s.Dir())
	if len(entries) != 1 || entries[0].Name() != sum[:2] {
		t.Errorf("store dir holds %v, want only %s/ (no temporary files)", entries, sum[:2])
	}
}

func TestOpenRefusesNames(t *testing.T) {
	s := New(t.TempDir())
	for _, name := range []string{"", "../../etc/passwd", "2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824",
		strings.Repeat("a", 63), strings.Repeat("a", 63) + "/", "..", strings.Repeat("g", 64)} {
		if _, err := s.Open(name); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%q) = %v, want a refusal of the name", name, err)
		}
	}
	if _, err := s.Open(strings.Repeat("a", 64)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open(absent) = %v, want ErrNotFound", err)
	}
}

func TestPrune(t *testing.T) {
	s := New(t.TempDir())
	old, _, _ := s.Put(strings.NewReader("old"))
	keep, _, _ := s.Put(strings.NewReader("keep"))
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(s.path(old), past, past); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(s.path(keep), past, past); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(strings.NewReader("keep")); err != nil { // used again: counts from now
		t.Fatal(err)
	}
	n, err := s.Prune(time.Now().Add(-24 * time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	if s.Has(old) || !s.Has(keep) {
		t.Errorf("after Prune: old held %v, keep held %v", s.Has(old), s.Has(keep))
	}
}

// BenchmarkPutOpen stores a file (hash, write, fsync, rename) and reads it
// back, per size; SetBytes makes ns/op read as MB/s.
func BenchmarkPutOpen(b *testing.B) {
	for _, mb := range []int{1, 8} {
		b.Run(strconv.Itoa(mb)+"MB", func(b *testing.B) {
			s := New(b.TempDir())
			data := bytes.Repeat([]byte{0xab}, mb<<20)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				data[0] = byte(i) // new content each time: a real write
				data[1] = byte(i >> 8)
				sum, _, err := s.Put(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				f, err := s.Open(sum)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, f)
				f.Close()
			}
		})
	}
}
