package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestMemoryConformance(t *testing.T) {
	var f files[sessions.Memory]
	sessionstest.TestMemory(t, func(t *testing.T, share sessions.Memory) sessions.Memory {
		db, path := f.open(t, share, nil)
		return f.keep(db.Memory(), path)
	})
}
