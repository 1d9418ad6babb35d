package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
)

// holdWriteLock takes the database's write lock on a connection of its
// own, as another process writing the file (a CLI command) holds it, until
// release is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
			t.Error(err)
		}
		_ = conn.Close()
		_ = other.Close()
	}
	t.Cleanup(release)
	return release
}

// openBusyDB opens a database whose statements give up on another
// connection's lock at once (a short busy timeout stands for a disk that
// refuses writes for a while: the failure is sessions.ErrStorage alike).
func openBusyDB(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{Path: path, Logger: zaptest.NewLogger(t), BusyTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// waitHealthy waits (a generous bound, not a measurement) for d to report
// that it writes again.
func waitHealthy(t *testing.T, d *Delivery) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("delivery still unhealthy after the database took writes again: %v", d.Health())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The marks given while the database refuses writes (a full disk, an I/O
// error, another process's lock held past the busy timeout) are not lost:
// they are kept in order and written once the database takes writes
// again, as the files journal keeps them in memory and pgstore retries
// them. Lost, a delivered reply stayed in the outbox and its message
// pending, and the next start sent it again (SPEC §3.7: a reply is sent
// twice only if the process dies between a chunk's send and its mark).
func TestMarksDuringStorageFaultWrittenWhenItReturns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db := openBusyDB(t, path)
	d := db.Delivery()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := d.Accept(ctx, sessions.Record{ID: id, Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Ready(sessions.Reply{ID: "r1", Records: []string{"a"}, Chunks: []string{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	release := holdWriteLock(t, path)
	if err := d.Sent("r1", 1); err != nil {
		t.Errorf("Sent during the fault: %v, want it kept", err)
	}
	if err := d.Sent("r1", 2); err != nil {
		t.Errorf("Sent during the fault: %v, want it kept", err)
	}
	if err := d.Ready(sessions.Reply{ID: "r2", Records: []string{"b"}, Chunks: []string{"z"}}); err != nil {
		t.Errorf("Ready during the fault: %v, want it kept", err)
	}
	if err := d.Done("c"); err != nil {
		t.Errorf("Done during the fault: %v, want it kept", err)
	}
	if d.Health() == nil {
		t.Error("healthy while marks wait")
	}
	release()
	waitHealthy(t, d)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2 := openBusyDB(t, path)
	defer db2.Close()
	d2 := db2.Delivery()
	pending, err := d2.Pending()
	if err != nil {
		t.Fatal(err)
	}
	replies, err := d2.Replies()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range pending {
		ids = append(ids, r.ID)
	}
	var rs []string
	for _, r := range replies {
		rs = append(rs, r.ID)
	}
	if len(ids) != 0 || len(rs) != 1 || rs[0] != "r2" {
		t.Errorf("after a restart: pending %v, replies %v; want none pending and r2 (never sent) in the outbox", ids, rs)
	}
}

// After a write failed, the journal reports healthy again once the
// database takes writes, by itself: the dispatcher parks the work of a
// turn that failed on storage until Health is nil (and /readyz fails
// meanwhile), so a health that waited for some other write to succeed
// left that work parked, and the daemon unready, on a quiet bot (SPEC
// §3.7: pending work resumes by itself when space returns).
func TestHealthRecoversWithoutAnotherWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db := openBusyDB(t, path)
	defer db.Close()
	d := db.Delivery()
	release := holdWriteLock(t, path)
	if _, err := d.Accept(ctx, sessions.Record{ID: "refused", Payload: json.RawMessage(`{}`)}); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Accept while the database refuses writes: %v, want sessions.ErrStorage", err)
	}
	if d.Health() == nil {
		t.Fatal("healthy after a refused write")
	}
	release()
	waitHealthy(t, d)
}

// A second process writing the file (a CLI command beside the daemon)
// makes the daemon's writes wait for SQLite's lock, never fail: the
// daemon's accepts, appends and marks and the other handle's writes, all
// at once, every one succeeds and is read back from either handle.
func TestTwoHandlesWriteOneFileWithoutFailures(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	daemon, err := Open(ctx, Options{Path: path, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	cli, err := Open(ctx, Options{Path: path, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	d := daemon.Delivery()
	const n = 200
	errs := make(chan error, 4*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("m%d", i)
			if _, err := d.Accept(ctx, sessions.Record{ID: id, Payload: json.RawMessage(`{}`)}); err != nil {
				errs <- err
				return
			}
			errs <- d.Done(id)
		}()
		go func() {
			defer wg.Done()
			errs <- cli.Cursors().SetCursor(ctx, "cli", fmt.Sprintf("c%d", i%10), fmt.Sprint(i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a write failed beside another process's writes: %v", err)
		}
	}
	if err := d.Health(); err != nil {
		t.Errorf("unhealthy after writing beside another process: %v", err)
	}
	var done int
	if err := cli.read.QueryRow(`SELECT count(*) FROM journal WHERE done_at IS NOT NULL`).Scan(&done); err != nil || done != n {
		t.Errorf("the other handle reads %d records done (%v), want %d", done, err, n)
	}
}

// Closing the backend while the database refuses writes ends the
// delivery's recovery loop before Close returns: no goroutine of the
// store outlives it to write into a closed database (a daemon that stops
// on a failing disk, or a test that closes a backend and opens the file
// again).
func TestCloseDuringFaultEndsRecoveryLoop(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	b, err := OpenBackend(ctx, BackendOptions{Options: Options{Path: path, Logger: zaptest.NewLogger(t), BusyTimeout: 20 * time.Millisecond}, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriteLock(t, path)
	if _, err := b.delivery.Accept(ctx, sessions.Record{ID: "refused", Payload: json.RawMessage(`{}`)}); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Accept while the database refuses writes: %v, want sessions.ErrStorage", err)
	}
	if !b.delivery.bl.loop.Load() {
		t.Fatal("no recovery loop after a refused write")
	}
	_ = b.Close() // may report the refused flush; the loop must end either way
	if b.delivery.bl.loop.Load() {
		t.Error("the recovery loop still runs after Close returned")
	}
	b.delivery.recovering() // a late failed write after Close starts nothing
	if b.delivery.bl.loop.Load() {
		t.Error("a recovery loop started after Close")
	}
	release()
}
