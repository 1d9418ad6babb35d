package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gofrs/flock"
)

// TestCheckBadLineQuarantined: a line damaged in the middle of a
// transcript is reported with its number; Repair moves it to
// <transcript>.quarantine and the transcript is the original again.
func TestCheckBadLineQuarantined(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one", "two", "three"})
	path := f.transcript(0)
	orig, err := os.ReadFile(path)
	must(t, err)
	lines := strings.SplitAfter(string(orig), "\n")
	must(t, os.WriteFile(path, []byte(strings.Join(lines[:2], "")+"{garbage in the middle\n"+strings.Join(lines[2:], "")), 0o600))

	ps := wantCodes(t, f.state, sessions.CodeTranscriptBadLine)
	if !strings.Contains(ps[0].Message, "line 3") || !ps[0].Fixable {
		t.Errorf("problem %+v", ps[0])
	}
	repairAll(t, f.state, ps)
	if got, _ := os.ReadFile(path); string(got) != string(orig) {
		t.Error("the transcript without the bad line differs from the original")
	}
	if q, _ := os.ReadFile(path + quarantineExt); string(q) != "{garbage in the middle\n" {
		t.Errorf("quarantine holds %q", q)
	}
}

// TestCheckTornTailIsNoProblem: a torn last line (a crash mid-append) is
// the store's to cut at the next append: Check reports nothing, counts
// nothing from it, and the store appends cleanly afterwards.
func TestCheckTornTailIsNoProblem(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one"})
	path := f.transcript(0)
	tf, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = tf.WriteString(`{"type":"message","id":"deadbeef","parentId":null,"message":{"role":"us`)
	must(t, err)
	must(t, tf.Close())
	wantCodes(t, f.state, "")
	if bad, err := ScanTranscript(path); err != nil || len(bad) != 0 {
		t.Errorf("ScanTranscript = %v, %v", bad, err)
	}

	m := openTestManager(t, f.state, Options{Passive: true}) // no start-up counter repair: count exactly
	st := mustStore(t, m, "main")
	tr, err := st.Transcript(f.ids[0])
	must(t, err)
	if _, err := tr.Append(context.Background(), sessions.UserText("after", time.Now())); err != nil {
		t.Fatal(err)
	}
	st.AddCounters(f.keys[0], sessions.Counters{Messages: 1})
	must(t, m.Close())
	wantCodes(t, f.state, "")
	if got := f.index(t)[f.keys[0].String()].MessageCount; got != 3 {
		t.Errorf("messageCount %d, want 3", got)
	}
}

// TestCheckLocks: metadata of a dead holder is a stale lock, truncated by
// Repair (the file stays); a live lock held too long is reported and left
// alone.
func TestCheckLocks(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one"})
	stale := filepath.Join(f.dir, indexName+lockExt)
	must(t, os.WriteFile(stale, []byte(`{"pid":999999,"startTime":"2020-01-01T00:00:00Z","createdAt":"2020-01-01T00:00:00Z","host":"gone"}`), 0o600))
	held := f.transcript(0) + lockExt
	meta := fmt.Sprintf(`{"pid":%d,"createdAt":%q,"host":"here"}`, os.Getpid(), time.Now().Add(-time.Hour).Format(time.RFC3339))
	must(t, os.WriteFile(held, []byte(meta), 0o600))
	fl := flock.New(held) // another open file description: a second holder for flock(2)
	if ok, err := fl.TryLock(); err != nil || !ok {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	defer fl.Unlock()

	ps := wantCodes(t, f.state, sessions.CodeLongHeldLock+" "+sessions.CodeStaleLock)
	for _, p := range ps {
		switch p.Code {
		case sessions.CodeStaleLock:
			if p.Path != stale || !p.Fixable || !strings.Contains(p.Message, "pid 999999") {
				t.Errorf("stale %+v", p)
			}
		case sessions.CodeLongHeldLock:
			if p.Path != held || p.Fixable || !strings.Contains(p.Message, "held for 1h") {
				t.Errorf("long-held %+v", p)
			}
		}
	}
	errs := Repair(context.Background(), f.state, ps, sessions.CheckOptions{})
	for i, p := range ps {
		if (p.Code == sessions.CodeStaleLock) != (errs[i] == nil) {
			t.Errorf("repair of %s: %v", p.Code, errs[i])
		}
	}
	if b, err := os.ReadFile(stale); err != nil || len(b) != 0 {
		t.Errorf("stale lock after repair: %q, %v (want an empty file)", b, err)
	}
	if b, _ := os.ReadFile(held); string(b) != meta {
		t.Error("the live lock was touched")
	}
	must(t, fl.Unlock())
	// The holder is gone now: its metadata is stale.
	repairAll(t, f.state, wantCodes(t, f.state, sessions.CodeStaleLock))
}

// TestCheckWithChangeLog: the index is sessions.json plus its change log
// (sessions.delta.jsonl): a session known only to the log is no orphan,
// a counter lag in the snapshot is found, and Repair leaves the index whole
// in sessions.json with the log empty.
func TestCheckWithChangeLog(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one", "two"})
	m := openTestManager(t, f.state, Options{Passive: true})
	st := mustStore(t, m, "main")
	late := dmKey(t, "main", "late")
	e, _ := mustBegin(t, st, late, sessions.Origin{Channel: "telegram", ChatType: "direct", At: time.Now()})
	tr, err := st.Transcript(e.SessionID)
	must(t, err)
	_, err = tr.Append(context.Background(), sessions.UserText("late", time.Now()))
	must(t, err)
	st.AddCounters(late, sessions.Counters{Messages: 1})
	must(t, m.Flush(context.Background()))
	deltaPath := filepath.Join(f.dir, deltaName)
	if fi, err := os.Stat(deltaPath); err != nil || fi.Size() == 0 {
		t.Fatalf("the change log is not in use: %v", err)
	}
	wantCodes(t, f.state, "")

	// Lag in the snapshot, under the log.
	b, err := os.ReadFile(filepath.Join(f.dir, indexName))
	must(t, err)
	lagged := strings.Replace(string(b), `"messageCount":4`, `"messageCount":1`, 1)
	if lagged == string(b) {
		t.Fatalf("no messageCount 4 in %s", b)
	}
	must(t, os.WriteFile(filepath.Join(f.dir, indexName), []byte(lagged), 0o600))
	repairAll(t, f.state, wantCodes(t, f.state, sessions.CodeCounterLag))
	if fi, err := os.Stat(deltaPath); err != nil || fi.Size() != 0 {
		t.Errorf("change log after repair: %v, %v (want empty)", fi, err)
	}
	idx := f.index(t)
	if idx[late.String()].SessionID != e.SessionID || idx[f.keys[0].String()].MessageCount != 4 {
		t.Errorf("index after repair: %v", idx)
	}
	// The running (passive) store sees the repaired index.
	if got, ok, err := st.Get(f.keys[0]); err != nil || !ok || got.MessageCount != 4 {
		t.Errorf("store Get after repair: %+v %v %v", got, ok, err)
	}
}

// TestCheckJournal: a damaged ingress journal line and a backlog are
// reported (a human decides), and Check leaves the journal untouched.
func TestCheckJournal(t *testing.T) {
	state := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(state, "ingress"), 0o700))
	journal := filepath.Join(state, "ingress", "journal.jsonl")
	lines := `{"op":"accept","rec":{"id":"tg:default:1:1","agentId":"main","sessionKey":"agent:main:tg:direct:1","payload":{},"acceptedAt":"2026-01-01T00:00:00Z"}}
{"op":"acc garbage
`
	must(t, os.WriteFile(journal, []byte(lines), 0o600))
	ps := mustCheck(t, state, sessions.CheckOptions{Now: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)})
	if got := codes(ps); got != sessions.CodeJournalBacklog+" "+sessions.CodeJournalDamaged {
		t.Fatalf("codes %q:\n%s", got, describe(ps))
	}
	for _, p := range ps {
		if p.Fixable || p.Path != journal {
			t.Errorf("%+v", p)
		}
	}
	if !strings.Contains(ps[0].Message, "line 2") || !strings.Contains(ps[1].Message, "1 message(s)") {
		t.Errorf("messages:\n%s", describe(ps))
	}
	// Within the backlog window only the damage is reported.
	if got := codes(mustCheck(t, state, sessions.CheckOptions{Now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)})); got != sessions.CodeJournalDamaged {
		t.Errorf("codes %q", got)
	}
	for i, err := range Repair(context.Background(), state, ps, sessions.CheckOptions{}) {
		if !errors.Is(err, sessions.ErrNotFixable) {
			t.Errorf("repair of %s: %v", ps[i].Code, err)
		}
	}
	if b, _ := os.ReadFile(journal); string(b) != lines {
		t.Error("the journal changed")
	}
	// A problem Check did not plan (say, decoded from JSON) is not guessed at.
	if errs := Repair(context.Background(), state, []sessions.Problem{{Code: sessions.CodeCounterLag, Fixable: true}}, sessions.CheckOptions{}); !errors.Is(errs[0], sessions.ErrNotFixable) {
		t.Errorf("repair of an unplanned problem: %v", errs[0])
	}
}

// TestRepairRereadsUnderLock: a problem fixed between Check and Repair (the
// daemon flushed its counters) is left as the store has it.
func TestRepairRereadsUnderLock(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one"})
	must(t, os.Remove(f.transcript(0)))
	ps := wantCodes(t, f.state, sessions.CodeMissingTranscript)

	m := openTestManager(t, f.state, Options{})
	st := mustStore(t, m, "main")
	e, err := st.Reset(context.Background(), f.keys[0], sessions.ResetOptions{Manual: true})
	must(t, err)
	must(t, m.Close())

	for _, err := range Repair(context.Background(), f.state, ps, sessions.CheckOptions{}) {
		if err != nil {
			t.Errorf("Repair: %v", err)
		}
	}
	if got := f.index(t)[f.keys[0].String()]; got.SessionID != e.SessionID {
		t.Errorf("Repair touched the new session: %+v", got)
	}
}
