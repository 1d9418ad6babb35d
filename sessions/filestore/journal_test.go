package filestore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
)

func openTestJournal(t *testing.T, dir string, now func() time.Time) *Journal {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	j := openJournal(dir, now, zap.NewNop())
	if j.openErr != nil {
		t.Fatal(j.openErr)
	}
	t.Cleanup(func() { _ = j.close() })
	return j
}

func pendingIDs(t *testing.T, j *Journal) []string {
	t.Helper()
	recs, err := j.Pending()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, fmt.Sprintf("%s/%d/%d", r.ID, r.Starts, r.Failures))
	}
	return ids
}

func TestJournalLifecycleAndReplay(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	ctx := context.Background()
	j := openTestJournal(t, dir, nil)
	for _, id := range []string{"tg:a:1:1", "tg:a:1:2", "tg:a:1:3"} {
		dup, err := j.Accept(ctx, sessions.Record{ID: id, AgentID: "main", Payload: json.RawMessage(`{"text":"x"}`)})
		if err != nil || dup {
			t.Fatalf("Accept(%s) = %v, %v", id, dup, err)
		}
	}
	if dup, _ := j.Accept(ctx, sessions.Record{ID: "tg:a:1:2"}); !dup {
		t.Error("duplicate of a pending record accepted")
	}
	if err := j.Start("tg:a:1:1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Fail("tg:a:1:1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Start("tg:a:1:1", "unknown"); err != nil {
		t.Fatal(err)
	}
	if err := j.Done("tg:a:1:2"); err != nil {
		t.Fatal(err)
	}
	if err := j.Done("tg:a:1:2"); err != nil {
		t.Errorf("second Done: %v", err)
	}
	if dup, _ := j.Accept(ctx, sessions.Record{ID: "tg:a:1:2"}); !dup {
		t.Error("duplicate of a done record accepted")
	}
	want := []string{"tg:a:1:1/2/1", "tg:a:1:3/0/0"}
	// What this process accepted is in its hands: not resumable until a
	// restart (a channel started before Resume must not queue it twice).
	if got := pendingIDs(t, j); len(got) != 0 {
		t.Errorf("records accepted by this process reported pending: %v", got)
	}
	if st := j.Stats(); st.Pending != 2 {
		t.Errorf("stats count %d pending, want 2", st.Pending)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	// A torn last line (crash mid-append) is ignored and cut off.
	f, _ := os.OpenFile(filepath.Join(dir, "journal.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"op":"accept","rec":{"id":"torn`)
	_ = f.Close()

	j2 := openTestJournal(t, dir, nil)
	if diff := cmp.Diff(want, pendingIDs(t, j2)); diff != "" {
		t.Errorf("pending after replay (-want +got):\n%s", diff)
	}
	if dup, _ := j2.Accept(ctx, sessions.Record{ID: "tg:a:1:2"}); !dup {
		t.Error("done id forgotten across restart")
	}
	if dup, err := j2.Accept(ctx, sessions.Record{ID: "tg:a:1:4"}); dup || err != nil {
		t.Fatalf("Accept after torn line: %v %v", dup, err)
	}
	_ = j2.close()
	j3 := openTestJournal(t, dir, nil)
	want = append(want, "tg:a:1:4/0/0")
	if diff := cmp.Diff(want, pendingIDs(t, j3)); diff != "" {
		t.Errorf("append after a torn line glued to it (-want +got):\n%s", diff)
	}
}

func TestJournalSecondOpenerRefused(t *testing.T) {
	dir := t.TempDir()
	openTestJournal(t, dir, nil)
	j := openJournal(dir, time.Now, zap.NewNop())
	if j.openErr == nil || !strings.Contains(j.openErr.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("second opener: %v", j.openErr)
	}
	if _, err := j.Accept(context.Background(), sessions.Record{ID: "x"}); err == nil {
		t.Error("Accept on an unopened journal succeeded")
	}
}

func TestJournalCompactsWhenDrained(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j := openTestJournal(t, dir, nil)
	j.compactMin = 16 << 10
	payload := json.RawMessage(`"` + strings.Repeat("p", 1000) + `"`)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				id := fmt.Sprintf("c:%d:%d", g, i)
				if _, err := j.Accept(ctx, sessions.Record{ID: id, Payload: payload}); err != nil {
					t.Error(err)
					return
				}
				if err := j.Done(id); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	settleRewrites(t, j)
	fi, _ := os.Stat(filepath.Join(dir, "journal.jsonl"))
	// Uncompacted: ~900 KB. Compacted: 800 done ids (~50 KB) plus at most
	// compactMin written since the last rewrite.
	if fi.Size() > 100<<10 {
		t.Errorf("journal is %d bytes after draining 800 records of 1 KB: not compacted", fi.Size())
	}
	_ = j.close()
	j2 := openTestJournal(t, dir, nil)
	if dup, _ := j2.Accept(ctx, sessions.Record{ID: "c:3:99"}); !dup {
		t.Error("compaction forgot done ids")
	}
	if p, _ := j2.Pending(); len(p) != 0 {
		t.Errorf("%d pending after compaction", len(p))
	}
}

func TestJournalForgetsOldDoneIDs(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	j := openTestJournal(t, t.TempDir(), clk.Now)
	j.doneKeep = 10
	ctx := context.Background()
	for i := range 20 {
		id := fmt.Sprint(i)
		if _, err := j.Accept(ctx, sessions.Record{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := j.Done(id); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			clk.Advance(sessions.DoneRetention + time.Hour)
		}
	}
	// id 0 is older than the retention and beyond the last doneKeep: forgotten;
	// ids 1..9 are beyond the last 10 but younger than the retention: kept.
	if dup, _ := j.Accept(ctx, sessions.Record{ID: "0"}); dup {
		t.Error("id older than retention and outside the last 10k still remembered")
	}
	if dup, _ := j.Accept(ctx, sessions.Record{ID: "5"}); !dup {
		t.Error("recent done id forgotten")
	}
}

func TestManagerJournalIsShared(t *testing.T) {
	verifyNoLeaks(t)
	m := openTestManager(t, "", Options{})
	if m.Journal() != m.Journal() {
		t.Error("Journal() returned two journals")
	}
	if _, err := m.Journal().Accept(context.Background(), sessions.Record{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(m.StateDir(), "ingress", "journal.jsonl")) {
		t.Error("journal not under <stateDir>/ingress")
	}
}

// TestJournalDeletedWhileRunningIsRewritten: a journal file deleted (or
// replaced) under the running daemon is noticed and rewritten from memory,
// so durability does not silently stop until the next restart.
func TestJournalDeletedWhileRunningIsRewritten(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	ctx := context.Background()
	j := openTestJournal(t, dir, nil)
	for _, id := range []string{"a", "b"} {
		if _, err := j.Accept(ctx, sessions.Record{ID: id, Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Done("a"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "journal.jsonl")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !fileExists(path) {
		if time.Now().After(deadline) {
			t.Fatal("deleted journal not rewritten")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := j.Accept(ctx, sessions.Record{ID: "c", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	j2 := openTestJournal(t, dir, nil)
	if got := pendingIDs(t, j2); !slices.Equal(got, []string{"b/0/0", "c/0/0"}) {
		t.Errorf("pending after the rewrite %v, want b and c", got)
	}
	if dup, _ := j2.Accept(ctx, sessions.Record{ID: "a"}); !dup {
		t.Error("done id forgotten by the rewrite")
	}
}

// TestJournalMarksDoNotWaitForAnFsync: Done and Sent with nothing to
// compact return while an fsync is in flight (syncMu held here, as the
// group commit holds it through a stalled disk); a turn's last marks used
// to wait for it only to learn that no rewrite was due.
func TestJournalMarksDoNotWaitForAnFsync(t *testing.T) {
	ctx := context.Background()
	j := openTestJournal(t, t.TempDir(), nil)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := j.Accept(ctx, sessions.Record{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	rp := sessions.Reply{ID: "r1", Records: []string{"b"}, Chunks: []string{"hi"}}
	if err := j.Ready(rp); err != nil {
		t.Fatal(err)
	}
	j.syncMu.Lock() // an fsync in flight
	done := make(chan error, 1)
	go func() { // owned by this test; ends when both marks return
		err := j.Done("a")
		if err == nil {
			err = j.Sent("r1", 1)
		}
		done <- err
	}()
	select {
	case err := <-done:
		j.syncMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		j.syncMu.Unlock()
		<-done
		t.Fatal("Done/Sent waited for the fsync in flight with nothing to compact")
	}
}
