package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// acceptDone accepts n records of payload and finishes them, ids
// prefix:0..n-1.
func acceptDone(t *testing.T, j *Journal, prefix string, n int, payload json.RawMessage) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprintf("%s:%d", prefix, i)
		if _, err := j.Accept(ctx, sessions.Record{ID: id, Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if err := j.Done(id); err != nil {
			t.Fatal(err)
		}
	}
}

// A day of done ids (remembered for duplicates, sessions.DoneRetention)
// grows what every rewrite of the journal writes. Rewrites must stay
// proportional to what was appended: until issue 21, once the done ids
// alone passed journalCompactMax the forced rewrite was due at every mark,
// and a busy bot rewrote tens of megabytes per message.
func TestJournalRewritesCostNoMoreThanAppends(t *testing.T) {
	j := openTestJournal(t, t.TempDir(), nil)
	j.compactMin, j.compactMax = 4<<10, 16<<10
	payload := json.RawMessage(`"` + strings.Repeat("p", 200) + `"`)
	acceptDone(t, j, "drained", 1500, payload)
	// One record stays pending from here on: the journal never drains,
	// only the forced rewrite runs.
	if _, err := j.Accept(context.Background(), sessions.Record{ID: "held", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	acceptDone(t, j, "busy", 1500, payload)
	settleRewrites(t, j)

	j.mu.Lock()
	rewrites, rewrote, grew := j.rewrites, j.rewrote, j.grew+j.size-j.compacted
	live := j.compacted
	j.mu.Unlock()
	if rewrites == 0 {
		t.Fatal("the journal was never rewritten")
	}
	if rewrote > 2*grew {
		t.Errorf("%d rewrites wrote %d bytes for %d bytes appended: more than twice", rewrites, rewrote, grew)
	}
	if fi, err := j.f.Stat(); err != nil {
		t.Fatal(err)
	} else if fi.Size() > 2*live+j.compactMax {
		t.Errorf("journal is %d bytes for %d live: never rewritten", fi.Size(), live)
	}
	_ = j.close()

	j2 := openTestJournal(t, j2dir(j), nil)
	for _, id := range []string{"drained:0", "busy:1499"} {
		if dup, err := j2.Accept(context.Background(), sessions.Record{ID: id}); err != nil || !dup {
			t.Errorf("Accept(%s) after the rewrites = %v, %v; want a duplicate", id, dup, err)
		}
	}
	if p, _ := j2.Pending(); len(p) != 1 || p[0].ID != "held" {
		t.Errorf("pending after the rewrites = %v; want held", p)
	}
}

// A start rewrites a log that is mostly what the rewrite drops, and leaves
// one that is mostly done ids still remembered (a rewrite would write
// nearly all of it again, at every start).
func TestJournalStartRewritesOnlyWhatItShrinks(t *testing.T) {
	t.Run("mostly garbage", func(t *testing.T) {
		dir := t.TempDir()
		j := openTestJournal(t, dir, nil)
		j.compactMin, j.compactMax = 1<<40, 1<<40 // never while running
		acceptDone(t, j, "g", 600, json.RawMessage(`"`+strings.Repeat("p", 1000)+`"`))
		_ = j.close()
		j2 := openTestJournal(t, dir, nil)
		if j2.rewrites != 1 {
			t.Errorf("start rewrote the journal %d times; want 1 (%d bytes, %d done ids)", j2.rewrites, j2.compacted, j2.done.len())
		}
	})
	t.Run("mostly done ids", func(t *testing.T) {
		dir := t.TempDir()
		j := openTestJournal(t, dir, nil)
		j.compactMin = 4 << 10
		acceptDone(t, j, "d", 6000, json.RawMessage(`"x"`))
		settleRewrites(t, j)
		size := j.size
		_ = j.close()
		if size <= journalCompactMin {
			t.Fatalf("journal of %d bytes: too small to be compacted at start", size)
		}
		j2 := openTestJournal(t, dir, nil)
		if j2.rewrites != 0 {
			t.Errorf("start rewrote a %d-byte journal of %d done ids", size, j2.done.len())
		}
		if dup, err := j2.Accept(context.Background(), sessions.Record{ID: "d:0"}); err != nil || !dup {
			t.Errorf("Accept(d:0) after the start = %v, %v; want a duplicate", dup, err)
		}
	})
}

// j2dir is the directory of j's log.
func j2dir(j *Journal) string { return j.path[:strings.LastIndex(j.path, "/")] }

// settleRewrites waits until no rewrite of j is due or running (the
// loop runs them).
func settleRewrites(t *testing.T, j *Journal) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j.mu.Lock()
		busy := j.rewriting || j.compactDueLocked()
		j.mu.Unlock()
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the journal's rewrite never ended")
		}
		time.Sleep(time.Millisecond)
	}
}

// pauseRewrite makes j's next rewrite wait, once its new log is written,
// until the returned release is called; entered is closed when it waits.
func pauseRewrite(j *Journal) (entered <-chan struct{}, release func()) {
	in, proceed := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	j.rewriteHook = func() {
		if once.Swap(true) {
			return
		}
		close(in)
		<-proceed
	}
	return in, sync.OnceFunc(func() { close(proceed) })
}

// fillUntil accepts and finishes records of payload until entered is
// closed (at most 2000).
func fillUntil(t *testing.T, j *Journal, entered <-chan struct{}, payload json.RawMessage) {
	t.Helper()
	ctx := context.Background()
	for i := range 2000 {
		select {
		case <-entered:
			return
		default:
		}
		id := fmt.Sprintf("fill:%d", i)
		if _, err := j.Accept(ctx, sessions.Record{ID: id, Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if err := j.Done(id); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no rewrite started")
	}
}

// A rewrite runs beside the journal's writes: while it writes and fsyncs
// the new log, Accept and the marks go on (until issue 21 it held both
// locks throughout, on the goroutine of the mark that found it due, and
// with a day of done ids every accept and mark of every chat waited for
// tens of megabytes to reach the disk). What was written meanwhile is in
// the new log.
func TestJournalRewriteHoldsNoWrites(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j := openTestJournal(t, dir, nil)
	j.compactMin, j.compactMax = 4<<10, 4<<10
	if _, err := j.Accept(ctx, sessions.Record{ID: "early", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	entered, release := pauseRewrite(j)
	defer release()
	fillUntil(t, j, entered, json.RawMessage(`"`+strings.Repeat("p", 500)+`"`))
	// The rewrite waits between writing its log and installing it: any
	// lock it held would deadlock these.
	if _, err := j.Accept(ctx, sessions.Record{ID: "during", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := j.Ready(sessions.Reply{ID: "rp", Records: []string{"early"}, Chunks: []string{"one", "two"}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Sent("rp", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Accept(ctx, sessions.Record{ID: "gone", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := j.Done("gone"); err != nil {
		t.Fatal(err)
	}
	release()
	settleRewrites(t, j)
	if j.rewrites == 0 {
		t.Fatal("the rewrite did not replace the log")
	}
	_ = j.close()

	j2 := openTestJournal(t, dir, nil)
	for _, id := range []string{"gone", "fill:0"} {
		if dup, err := j2.Accept(ctx, sessions.Record{ID: id}); err != nil || !dup {
			t.Errorf("finished record %s came back after the rewrite: %v, %v", id, dup, err)
		}
	}
	if ids := pendingIDs(t, j2); !slices.Equal(ids, []string{"during/0/0"}) {
		t.Errorf("pending after the rewrite = %v; want [during/0/0] (early is answered by rp)", ids)
	}
	rps, err := j2.Replies()
	if err != nil || len(rps) != 1 || rps[0].ID != "rp" || rps[0].Sent != 1 {
		t.Errorf("replies after the rewrite = %+v, %v; want rp with 1 chunk sent", rps, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "journal.jsonl"+rewriteExt)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the rewrite's file is left: %v", err)
	}
}

// A write that fails while a rewrite runs leaves the old log in use: the
// failed mark may be in memory only, and the rewrite's tail does not hold
// it. Nothing is lost once the disk takes writes again.
func TestJournalRewriteKeepsTheLogAfterAFailure(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var full, badTrunc atomic.Bool
	j := openJournalWith(dir, time.Now, zap.NewNop(), faultyOpener(&full, &badTrunc))
	if j.openErr != nil {
		t.Fatal(j.openErr)
	}
	t.Cleanup(func() { _ = j.close() })
	j.compactMin, j.compactMax = 4<<10, 4<<10
	if _, err := j.Accept(ctx, sessions.Record{ID: "kept", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	entered, release := pauseRewrite(j)
	defer release()
	fillUntil(t, j, entered, json.RawMessage(`"`+strings.Repeat("p", 500)+`"`))
	full.Store(true)
	if err := j.Done("kept"); err != nil { // written nowhere: kept in memory, retried
		t.Fatal(err)
	}
	release()
	settleRewrites(t, j)
	if j.rewrites != 0 {
		t.Errorf("the rewrite replaced the log after a failed write (%d rewrites)", j.rewrites)
	}
	full.Store(false)
	j.recover() // what the loop does every second
	if err := j.Health(); err != nil {
		t.Fatalf("journal still failing: %v", err)
	}
	_ = j.close()
	j2 := openTestJournal(t, dir, nil)
	if dup, err := j2.Accept(ctx, sessions.Record{ID: "kept"}); err != nil || !dup {
		t.Errorf("the record finished during the failed rewrite came back: %v, %v", dup, err)
	}
	if ids := pendingIDs(t, j2); len(ids) != 0 {
		t.Errorf("pending after the restart = %v", ids)
	}
}
