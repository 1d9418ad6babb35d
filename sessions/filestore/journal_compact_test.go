package filestore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
			t.Errorf("start rewrote the journal %d times; want 1 (%d bytes, %d done ids)", j2.rewrites, j2.compacted, len(j2.doneOrder))
		}
	})
	t.Run("mostly done ids", func(t *testing.T) {
		dir := t.TempDir()
		j := openTestJournal(t, dir, nil)
		j.compactMin = 4 << 10
		acceptDone(t, j, "d", 6000, json.RawMessage(`"x"`))
		size := j.size
		_ = j.close()
		if size <= journalCompactMin {
			t.Fatalf("journal of %d bytes: too small to be compacted at start", size)
		}
		j2 := openTestJournal(t, dir, nil)
		if j2.rewrites != 0 {
			t.Errorf("start rewrote a %d-byte journal of %d done ids", size, len(j2.doneOrder))
		}
		if dup, err := j2.Accept(context.Background(), sessions.Record{ID: "d:0"}); err != nil || !dup {
			t.Errorf("Accept(d:0) after the start = %v, %v; want a duplicate", dup, err)
		}
	})
}

// j2dir is the directory of j's log.
func j2dir(j *Journal) string { return j.path[:strings.LastIndex(j.path, "/")] }
