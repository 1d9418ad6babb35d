package pgstore

import (
	"fmt"
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestMemoryConformance runs the memory suite against PostgreSQL, each
// case on a database of its own, a second handle being a second pool.
func TestMemoryConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.Memory]{urls: map[sessions.Memory]string{}}
	sessionstest.TestMemory(t, func(t *testing.T, share sessions.Memory) sessions.Memory {
		db, remember := dbs.open(t, share, share == nil)
		m := db.Memory() // keyed by its *DB: each handle is a distinct key
		remember(m)
		return m
	})
}

// BenchmarkMemoryRead is sessionstest.BenchMemoryRead on PostgreSQL (the
// files figures: BenchmarkMemoryRead in package filestore).
func BenchmarkMemoryRead(b *testing.B) {
	for _, notes := range []int{10, 50} {
		b.Run(fmt.Sprint(notes, "notes"), func(b *testing.B) {
			sessionstest.BenchMemoryRead(b, openBench(b, 4).Memory(), notes)
		})
	}
}
