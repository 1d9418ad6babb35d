package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
)

func openTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), FileName), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func putCursor(name, value string) writeFn {
	return func(tx *wtx) error {
		_, err := tx.Exec(`INSERT INTO cursors (scope, name, value, updated_at) VALUES ('t', ?, ?, 0)
			ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value`, name, value)
		return err
	}
}

func cursorValues(t *testing.T, db *DB) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := db.query(context.Background(), func(r *sql.Rows) error {
		var n, v string
		if err := r.Scan(&n, &v); err != nil {
			return err
		}
		got[n] = v
		return nil
	}, `SELECT name, value FROM cursors WHERE scope = 't'`)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A batch holding lazy and durable jobs, some failing: each job gets its
// own outcome, a failed job's statements are undone and the others kept,
// the lazy ones are committed without an fsync and the durable ones with
// one. The batch is handed to the writer's commit directly (the writer
// goroutine is idle: nothing else is queued), so its grouping does not
// depend on timing.
func TestCommitSplitLazyAndDurable(t *testing.T) {
	db := openTestDB(t)
	w := db.w
	boom := errors.New("boom")
	failing := func(name string) writeFn {
		return func(tx *wtx) error {
			if err := putCursor(name, "undone")(tx); err != nil {
				return err
			}
			return boom
		}
	}
	ctx := context.Background()
	mk := func(fn writeFn, lazy bool) *job { return &job{ctx: ctx, fn: fn, lazy: lazy, done: make(chan error, 1)} }
	batch := []*job{
		mk(putCursor("lazy-ok", "1"), true),
		mk(failing("lazy-bad"), true),
		mk(putCursor("durable-ok", "2"), false),
		mk(failing("durable-bad"), false),
	}
	// Stop the writer goroutine so the test owns the connection.
	w.once.Do(func() { close(w.quit) })
	<-w.done
	fsyncs := w.fsyncs.Load()
	w.commitSplit(batch)
	for i, want := range []error{nil, boom, nil, boom} {
		if err := <-batch[i].done; !errors.Is(err, want) {
			t.Errorf("job %d: %v, want %v", i, err, want)
		}
	}
	if got := w.fsyncs.Load() - fsyncs; got != 1 {
		t.Errorf("fsyncs %d, want 1 (the durable commit only)", got)
	}
	if w.unsynced {
		t.Errorf("the durable commit after the lazy one did not count as fsyncing it")
	}
	if got := cursorValues(t, db); len(got) != 2 || got["lazy-ok"] != "1" || got["durable-ok"] != "2" {
		t.Errorf("stored %v, want lazy-ok=1 durable-ok=2 only", got)
	}
	// The statements the jobs ran are prepared now, the savepoint's too.
	for _, q := range []string{"SAVEPOINT job", "RELEASE job", "ROLLBACK TO job"} {
		if w.stmts.stmts[q] == nil {
			t.Errorf("%q not kept prepared", q)
		}
	}
	// Run again on kept statements: same outcomes.
	batch = []*job{mk(putCursor("lazy-ok", "3"), true), mk(failing("durable-bad"), false)}
	w.commitSplit(batch)
	if err := <-batch[0].done; err != nil {
		t.Errorf("lazy job on kept statements: %v", err)
	}
	if err := <-batch[1].done; !errors.Is(err, boom) {
		t.Errorf("failing job on kept statements: %v", err)
	}
	if got := cursorValues(t, db); len(got) != 2 || got["lazy-ok"] != "3" {
		t.Errorf("stored %v, want lazy-ok=3 durable-ok=2", got)
	}
	// Its durable job failed, so nothing fsynced the lazy commit.
	if !w.unsynced {
		t.Error("a lazy commit with no durable commit after it counts as fsynced")
	}
	w.syncWAL()
	if w.unsynced {
		t.Error("still unsynced after syncWAL")
	}
	w.stmts.close() // the stopped writer's cache, prepared again by this test
}

// Lazy writes with no durable write after them are fsynced by the writer
// on its own (lazySyncAfter later).
func TestLazyWritesSyncedWithoutDurableWrite(t *testing.T) {
	db := openTestDB(t)
	before := db.w.fsyncs.Load()
	if err := db.w.doLazy(context.Background(), putCursor("a", "1")); err != nil {
		t.Fatal(err)
	}
	if got := cursorValues(t, db); got["a"] != "1" {
		t.Fatalf("lazy write not visible when it returned: %v", got)
	}
	deadline := time.Now().Add(30 * time.Second) // a bound for a loaded machine, not a timing
	for db.w.fsyncs.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("the lazy write was never fsynced")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A statement that does not prepare fails its job, is not kept, and the
// writer goes on.
func TestBadStatementNotKept(t *testing.T) {
	db := openTestDB(t)
	const bad = `INSERT INTO no_such_table VALUES (1)`
	err := db.w.do(context.Background(), func(tx *wtx) error { _, err := tx.Exec(bad); return err })
	if err == nil {
		t.Fatal("a statement on a missing table succeeded")
	}
	if err := db.w.do(context.Background(), putCursor("b", "2")); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	if got := cursorValues(t, db); got["b"] != "2" {
		t.Errorf("stored %v", got)
	}
	// The writer prepared what it missed before it answered the writes:
	// its cache is settled (and idle) now.
	if db.w.stmts.stmts[bad] != nil {
		t.Error("a statement that does not prepare was kept")
	}
	if len(db.w.stmts.stmts) == 0 {
		t.Error("nothing was kept prepared")
	}
}

// A job whose statement fails with an error after which SQLite rolls the
// whole transaction back by itself (SQLITE_FULL here: the file may not
// grow) must not leave the jobs after it running outside any transaction,
// each committed on its own while its caller is told the batch failed:
// every job of the batch fails with sessions.ErrStorage and none of them
// is stored. The writer goes on with the next batch.
func TestStorageErrorMidBatchFailsWholeBatch(t *testing.T) {
	db := openTestDB(t)
	w := db.w
	// Stop the writer goroutine so the test owns the connection.
	w.once.Do(func() { close(w.quit) })
	<-w.done
	defer w.stmts.close()
	var pages int
	if err := w.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mk := func(fn writeFn) *job { return &job{ctx: ctx, fn: fn, done: make(chan error, 1)} }
	batch := []*job{
		mk(putCursor("before", "1")),
		mk(putCursor("big", strings.Repeat("x", 1<<20))), // more than the file may grow
		mk(putCursor("after", "3")),
	}
	w.commitSplit(batch)
	for i, j := range batch {
		if err := <-j.done; !errors.Is(err, sessions.ErrStorage) {
			t.Errorf("job %d: %v, want sessions.ErrStorage", i, err)
		}
	}
	if got := cursorValues(t, db); len(got) != 0 {
		t.Errorf("stored %v after a batch every caller was told failed", keys(got))
	}
	if _, err := w.db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	next := []*job{mk(putCursor("next", "4"))}
	w.commitSplit(next)
	if err := <-next[0].done; err != nil {
		t.Fatalf("the next batch: %v", err)
	}
	if got := cursorValues(t, db); len(got) != 1 || got["next"] != "4" {
		t.Errorf("stored %v, want next=4 only", got)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A job that reaches the queue after the writer stopped (Close came
// between submit's look at quit and its send, and the send won the
// select) is answered errClosed, never left waiting for a writer that is
// gone. The test queues it past submit's check, as that interleaving
// would.
func TestJobQueuedAfterWriterStoppedIsRefused(t *testing.T) {
	db := openTestDB(t)
	w := db.w
	w.close()
	ran := false
	j := &job{ctx: context.Background(), fn: func(*wtx) error { ran = true; return nil }, done: make(chan error, 1)}
	w.jobs <- j
	got := make(chan error, 1)
	go func() { got <- w.wait(j) }()
	select {
	case err := <-got:
		if !errors.Is(err, errClosed) {
			t.Errorf("wait: %v, want errClosed", err)
		}
	case <-time.After(time.Minute): // a hang, not a timing
		t.Fatal("a job queued after the writer stopped is never answered")
	}
	if ran {
		t.Error("a job queued after the writer stopped ran")
	}
}

// The connection's synchronous setting during each commit is the one its
// kind needs: FULL (2) for a durable write, so that its commit fsyncs the
// WAL before do returns, also right after a lazy commit set NORMAL (1),
// and after a batch whose durable jobs all failed.
func TestDurableCommitRunsSynchronousFull(t *testing.T) {
	db := openTestDB(t)
	w := db.w
	w.once.Do(func() { close(w.quit) })
	<-w.done
	defer w.stmts.close()
	ctx := context.Background()
	level := func(got *int) writeFn {
		// Not through the writer's kept statements: a prepared PRAGMA
		// returns the value of when it was prepared.
		return func(tx *wtx) error { return tx.Tx.QueryRow(`PRAGMA synchronous`).Scan(got) }
	}
	var lazy1, durable1, lazy2, durable2 int
	boom := errors.New("boom")
	batch := []*job{
		{ctx: ctx, fn: level(&lazy1), lazy: true, done: make(chan error, 1)},
		{ctx: ctx, fn: level(&durable1), done: make(chan error, 1)},
	}
	w.commitSplit(batch)
	batch = append(batch,
		&job{ctx: ctx, fn: func(*wtx) error { return boom }, done: make(chan error, 1)},
		&job{ctx: ctx, fn: level(&lazy2), lazy: true, done: make(chan error, 1)},
	)
	w.commitSplit(batch[2:])
	last := &job{ctx: ctx, fn: level(&durable2), done: make(chan error, 1)}
	w.commitSplit([]*job{last})
	for _, j := range append(batch, last) {
		if err := <-j.done; err != nil && !errors.Is(err, boom) {
			t.Fatal(err)
		}
	}
	if lazy1 != 1 || lazy2 != 1 || durable1 != 2 || durable2 != 2 {
		t.Errorf("synchronous: lazy %d and %d, durable %d and %d; want lazy 1 (NORMAL), durable 2 (FULL)", lazy1, lazy2, durable1, durable2)
	}
}

// A write whose fn panics (a Patch callback, say) panics in the goroutine
// that made it, as on the other backends, where fn runs in the caller:
// not in the writer goroutine, which would end the process with every
// write queued beside it. Its statements are undone and the writer goes
// on.
func TestPanickingWritePanicsInItsCaller(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	got := make(chan any, 1)
	go func() {
		defer func() { got <- recover() }()
		_ = db.w.do(ctx, func(tx *wtx) error {
			if err := putCursor("undone", "1")(tx); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if v := <-got; v != "boom" {
		t.Errorf("the caller recovered %v, want boom", v)
	}
	if err := db.w.do(ctx, putCursor("next", "2")); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	if got := cursorValues(t, db); len(got) != 1 || got["next"] != "2" {
		t.Errorf("stored %v, want next=2 only", got)
	}
}

// A statement that fails for want of space while SQLite keeps the
// transaction is sessions.ErrStorage to its caller, as when the whole
// batch is lost. SQLite rolls back only the statement on SQLITE_FULL when
// it has a statement journal (a multi-row insert, as a transcript
// append's search words) and the pager is not left in its error state:
// the file's page limit, here (a full disk met while spilling the cache
// takes the transaction with it, the case TestStorageErrorMidBatchFails
// WholeBatch pins). It was the bare driver error, so a turn whose append
// met it was counted as a failure, retried and given up with an apology,
// where storage failures park the work until the disk takes writes again
// (SPEC §3.7), and Health stayed nil. The other jobs of the batch are
// kept.
func TestStatementStorageErrorIsErrStorage(t *testing.T) {
	db := openTestDB(t)
	w := db.w
	w.once.Do(func() { close(w.quit) })
	<-w.done
	defer w.stmts.close()
	var pages int
	if err := w.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	var words []string
	for i := range 2000 {
		words = append(words, fmt.Sprintf("%s%d", strings.Repeat("w", 200), i))
	}
	list, err := json.Marshal(words)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mk := func(fn writeFn) *job { return &job{ctx: ctx, fn: fn, done: make(chan error, 1)} }
	batch := []*job{
		mk(putCursor("before", "1")),
		mk(func(tx *wtx) error {
			_, err := tx.Exec(`INSERT INTO search_terms (token, session_id, seq) SELECT value, 's', 1 FROM json_each(?)`, string(list))
			return err
		}),
		mk(putCursor("after", "3")),
	}
	w.commitSplit(batch)
	errs := []error{<-batch[0].done, <-batch[1].done, <-batch[2].done}
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("the jobs beside it: %v, %v", errs[0], errs[2])
	}
	if !errors.Is(errs[1], sessions.ErrStorage) {
		t.Errorf("a statement refused for want of space: %v, want sessions.ErrStorage", errs[1])
	}
	if w.health() == nil {
		t.Error("healthy after a write was refused for want of space")
	}
	if got := cursorValues(t, db); len(got) != 2 {
		t.Errorf("stored %v, want before and after", keys(got))
	}
}
