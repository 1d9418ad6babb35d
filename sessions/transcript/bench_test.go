package transcript

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// BenchmarkTranscriptAppend appends one user message durably (write under
// the lock, fsync after it). "parallel-one-session" shows fsync grouping
// across concurrent appends to one file; "parallel-sessions" appends to a
// separate transcript per goroutine.
func BenchmarkTranscriptAppend(b *testing.B) {
	ctx := context.Background()
	msg := user("a typical chat message of a few dozen characters, nothing more")
	b.Run("serial", func(b *testing.B) {
		tr := newTestTranscript(b, filepath.Join(b.TempDir(), "s.jsonl"), newMemLocker(), nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.Append(ctx, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("serial-nosync", func(b *testing.B) {
		tr := newTestTranscript(b, filepath.Join(b.TempDir(), "s.jsonl"), newMemLocker(), nil, withoutSync())
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.Append(ctx, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("turn-nosync", func(b *testing.B) {
		// A turn's transcript I/O without the fsync (its CPU), as the
		// runner does it: the user message and the context for the model
		// call in one step, then the reply. A compaction
		// every 64 turns keeps the context the size of a chat's.
		tr := newTestTranscript(b, filepath.Join(b.TempDir(), "s.jsonl"), newMemLocker(), nil, withoutSync())
		reply := assistantText("a reply of about the same size as the message it answers, give or take")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := tr.AppendLazyContext(ctx, msg); err != nil {
				b.Fatal(err)
			}
			if _, err := tr.Append(ctx, reply); err != nil {
				b.Fatal(err)
			}
			if i++; i%64 == 0 {
				if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "the chat so far"}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("parallel-one-session", func(b *testing.B) {
		tr := newTestTranscript(b, filepath.Join(b.TempDir(), "s.jsonl"), newMemLocker(), nil)
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := tr.Append(ctx, msg); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("parallel-sessions", func(b *testing.B) {
		dir := b.TempDir()
		var n atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			tr := newTestTranscript(b, filepath.Join(dir, fmt.Sprintf("%d.jsonl", n.Add(1))), newMemLocker(), nil)
			for pb.Next() {
				if _, err := tr.Append(ctx, msg); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkLoadCompacted opens a 10,000-message transcript whose latest
// compaction keeps the last 50 messages and rebuilds its context, as the
// first turn after a restart does.
func BenchmarkLoadCompacted(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "big.jsonl")
	off := writeCompactedSession(b, path, 10000, 50, 0)
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"from-end", nil},
		{"with-hint", []Option{WithCompactionHint(off)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tr := newTestTranscript(b, path, nil, nil, bc.opts...)
				c, err := tr.Context(ctx)
				if err != nil || len(c.Messages) < 50 {
					b.Fatal(len(c.Messages), err)
				}
			}
		})
	}
	b.Run("full-forward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := forwardContext(b, path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		tr := newTestTranscript(b, path, nil, nil)
		if _, err := tr.Context(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.Context(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
