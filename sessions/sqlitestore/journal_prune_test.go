package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
)

// The ids of completed messages are forgotten past sessions.DoneRetention
// beyond the last sessions.DoneKeep by a daemon that completes few
// messages: the pruning ran only after 1000 completions of one process,
// so a daemon restarted more often than that (a small bot, a config
// change, an upgrade) never pruned and the journal grew without end,
// payloads and all, where the files journal compacts at start and
// pgstore prunes on a timer. The daemon's backend prunes when it starts
// (and hourly, with session maintenance).
func TestDaemonStartPrunesOldDoneIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db, err := Open(ctx, Options{Path: path, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	old := toNanos(time.Now().Add(-2 * sessions.DoneRetention))
	const extra = pruneBatch + 5 // more than one pruning job deletes
	err = db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO journal (id, payload, accepted_at, done_at) SELECT 'r' || i, '{"text":"kept for nothing"}', ?, ? + i FROM n`,
			sessions.DoneKeep+extra, old, old)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBackend(ctx, BackendOptions{Options: Options{Path: path, Logger: zaptest.NewLogger(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // waits for the start's maintenance round
		t.Fatal(err)
	}
	db, err = Open(ctx, Options{Path: path, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.read.QueryRow(`SELECT count(*) FROM journal`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != sessions.DoneKeep {
		t.Errorf("%d completed ids kept after a daemon's start, want the last %d", n, sessions.DoneKeep)
	}
}

// A finished record keeps its id (redeliveries within the retention are
// dropped) but not its payload: a day of traffic is not a day of updates
// kept whole in the database until the pruning. Done directly, and
// through a reply sent to its last chunk.
func TestDoneRecordsKeepNoPayload(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), FileName), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := db.Delivery()
	payload := json.RawMessage(`{"text":"` + strings.Repeat("x", 2000) + `"}`)
	for i := range 20 {
		if _, err := d.Accept(ctx, sessions.Record{ID: fmt.Sprintf("m%d", i), Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := d.Done(fmt.Sprintf("m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 10; i < 20; i++ {
		id := fmt.Sprintf("r%d", i)
		if err := d.Ready(sessions.Reply{ID: id, Records: []string{fmt.Sprintf("m%d", i)}, Chunks: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
		if err := d.Sent(id, 1); err != nil {
			t.Fatal(err)
		}
	}
	var done, kept int
	if err := db.read.QueryRow(`SELECT count(*), coalesce(sum(length(payload)), 0) FROM journal WHERE done_at IS NOT NULL`).Scan(&done, &kept); err != nil {
		t.Fatal(err)
	}
	if done != 20 || kept != 0 {
		t.Errorf("%d done records keep %d bytes of payload, want 20 keeping none", done, kept)
	}
	for i := range 20 {
		if dup, err := d.Accept(ctx, sessions.Record{ID: fmt.Sprintf("m%d", i), Payload: payload}); err != nil || !dup {
			t.Errorf("redelivery of done m%d: duplicate %v, %v; want it dropped", i, dup, err)
		}
	}
}
