package filestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
)

// BenchmarkLockAcquire takes and releases the lock of one of 100 session
// lock files, as a transcript append does per message.
func BenchmarkLockAcquire(b *testing.B) {
	dir := b.TempDir()
	ls := newLockSet(time.Second, time.Hour, zap.NewNop(), nil)
	locks := make([]*fileLock, 100)
	for i := range locks {
		locks[i] = ls.get(filepath.Join(dir, fmt.Sprintf("%d.jsonl.lock", i)))
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, unlock, err := locks[i%len(locks)].Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		unlock()
		i++
	}
}
