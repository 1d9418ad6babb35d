package dispatch

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkSaveMedia1MB stores a 1 MB download (hash, 0600 file, rename):
// the per-attachment cost the dispatcher adds before a turn.
func BenchmarkSaveMedia1MB(b *testing.B) {
	root := b.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := saveMedia(root, "main", uuid.NewString(), ".bin", bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
