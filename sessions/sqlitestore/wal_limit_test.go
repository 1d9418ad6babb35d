package sqlitestore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The WAL file is cut back to walSizeLimit once a checkpoint emptied it:
// a burst of writes (an import, a migrate) does not leave a WAL file of
// its size for good.
func TestWALCutBackAfterCheckpoint(t *testing.T) {
	old := walSizeLimit
	walSizeLimit = 64 << 10
	defer func() { walSizeLimit = old }()
	db := openTestDB(t)
	ctx := context.Background()
	big := strings.Repeat("x", 8<<10)
	for i := range 400 { // ~3 MB through the WAL
		if err := db.w.do(ctx, putCursor(fmt.Sprint("c", i), big)); err != nil {
			t.Fatal(err)
		}
	}
	wal := db.Path() + "-wal"
	// The writer is idle: the checkpoint runs on its connection between
	// its transactions, as SQLite's automatic one does after a commit.
	if _, err := db.write.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		t.Fatal(err)
	}
	// The first write after the checkpoint restarts the WAL and cuts it.
	if err := db.w.do(ctx, putCursor("after", "1")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > walSizeLimit {
		t.Errorf("WAL file is %d bytes after a checkpoint, want at most the limit %d", st.Size(), walSizeLimit)
	}
}
