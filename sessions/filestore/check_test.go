package filestore

import (
	"context"
	"github.com/gateway/gateway/sessions"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckCleanState: a state written by the store has no problems, and
// Check changes nothing (it may run beside the daemon).
func TestCheckCleanState(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one", "two"}, []string{"three"})
	before := f.index(t)
	hash := fileHash(t, f.transcript(0))
	wantCodes(t, f.state, "")
	if got := f.index(t); len(got) != len(before) {
		t.Errorf("index changed: %d entries, had %d", len(got), len(before))
	}
	if fileHash(t, f.transcript(0)) != hash {
		t.Error("Check changed a transcript")
	}
	if _, err := Check(context.Background(), filepath.Join(f.state, "nope"), sessions.CheckOptions{}); err == nil {
		t.Error("Check of a missing state dir: no error")
	}
}

// TestCheckMissingTranscript: an entry whose transcript is gone is found;
// Repair zeroes its counters; an entry with no messages yet is no problem.
func TestCheckMissingTranscript(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one"}, []string{"two"})
	must(t, os.Remove(f.transcript(0)))
	idx := f.index(t)
	fresh := dmKey(t, "main", "fresh")
	idx[fresh.String()] = sessions.Entry{SessionKey: fresh.String(), SessionID: "11111111-1111-4111-8111-111111111111"}
	f.writeIndex(t, idx)

	ps := wantCodes(t, f.state, sessions.CodeMissingTranscript)
	if p := ps[0]; p.Key != f.keys[0].String() || !p.Fixable || p.Path != f.transcript(0) || p.Agent != "main" ||
		!strings.Contains(p.Message, "says 2 messages") {
		t.Errorf("problem %+v", p)
	}
	repairAll(t, f.state, ps)
	if e := f.index(t)[f.keys[0].String()]; e.MessageCount != 0 || e.SessionID != f.ids[0] {
		t.Errorf("entry after repair %+v", e)
	}
}

// TestCheckCounterLag: counters behind the transcript are raised to it.
func TestCheckCounterLag(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one", "two"})
	idx := f.index(t)
	e := idx[f.keys[0].String()]
	e.MessageCount = 1
	idx[f.keys[0].String()] = e
	f.writeIndex(t, idx)

	ps := wantCodes(t, f.state, sessions.CodeCounterLag)
	if !strings.Contains(ps[0].Message, "messageCount 1") || !strings.Contains(ps[0].Message, "the transcript has 4 and 0") {
		t.Errorf("message %q", ps[0].Message)
	}
	repairAll(t, f.state, ps)
	if got := f.index(t)[f.keys[0].String()].MessageCount; got != 4 {
		t.Errorf("messageCount %d after repair, want 4", got)
	}
	// Counters ahead of the transcript (coalesced, not yet appended) are
	// not a lag.
	idx = f.index(t)
	e = idx[f.keys[0].String()]
	e.MessageCount = 9
	idx[f.keys[0].String()] = e
	f.writeIndex(t, idx)
	wantCodes(t, f.state, "")
}

// TestCheckOrphanTranscript: a transcript without an entry gets its entry
// back from its header; of two orphans of one key the newer is re-created
// and the older archived; an orphan of a key that has a session is
// archived; one without a usable header is left to a human. Nothing is
// deleted.
func TestCheckOrphanTranscript(t *testing.T) {
	at := time.Now().Add(-2 * time.Hour)
	f := seedCheck(t, at, []string{"alpha  one", "alpha two"}, []string{"beta"})
	hash := fileHash(t, f.transcript(0))
	idx := f.index(t)
	delete(idx, f.keys[0].String())
	f.writeIndex(t, idx)
	other := dmKey(t, "main", "other")
	older := writeTranscript(t, f.dir, "22222222-2222-4222-8222-222222222222", other.String(), at, "old")
	newer := writeTranscript(t, f.dir, "33333333-3333-4333-8333-333333333333", other.String(), at.Add(time.Hour), "new", "er")
	ofBeta := writeTranscript(t, f.dir, "44444444-4444-4444-8444-444444444444", f.keys[1].String(), at, "stray")
	headless := filepath.Join(f.dir, "55555555-5555-4555-8555-555555555555.jsonl")
	must(t, os.WriteFile(headless, []byte(`{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":[],"timestamp":1}}`+"\n"), 0o600))

	// The headless file's first line is also a bad line (not a header).
	ps := wantCodes(t, f.state, strings.Repeat(sessions.CodeOrphanTranscript+" ", 5)+sessions.CodeTranscriptBadLine)
	fixes := map[string]string{}
	for _, p := range ps {
		fixes[p.Path] = p.Fix
	}
	for path, want := range map[string]string{f.transcript(0): "re-create", newer: "re-create", older: "archive it as",
		ofBeta: "archive it as", headless: ""} {
		if got := fixes[path]; (want == "") != (got == "") || !strings.HasPrefix(got, want) {
			t.Errorf("fix of %s = %q, want %q...", filepath.Base(path), got, want)
		}
	}
	errs := Repair(context.Background(), f.state, ps, sessions.CheckOptions{})
	for i, err := range errs {
		if ps[i].Fixable != (err == nil) {
			t.Errorf("repair of %s: %v", ps[i].Path, err)
		}
	}
	// Only the headless orphan remains: it needs a human.
	for _, p := range wantCodes(t, f.state, sessions.CodeOrphanTranscript+" "+sessions.CodeTranscriptBadLine) {
		if p.Path != headless || p.Fixable {
			t.Errorf("left: %+v", p)
		}
	}
	idx = f.index(t)
	if e := idx[f.keys[0].String()]; e.SessionID != f.ids[0] || e.MessageCount != 4 || e.Title != "alpha one" ||
		e.SessionStartedAt.IsZero() || e.LastInteractionAt.Before(e.SessionStartedAt) || e.Channel != "telegram" || e.ChatType != "direct" {
		t.Errorf("re-created entry %+v", e)
	}
	if e := idx[other.String()]; e.SessionID != "33333333-3333-4333-8333-333333333333" || e.MessageCount != 2 {
		t.Errorf("newer orphan's entry %+v", e)
	}
	if e := idx[f.keys[1].String()]; e.SessionID != f.ids[1] {
		t.Errorf("beta's entry changed: %+v", e)
	}
	for _, p := range []string{older, ofBeta} {
		if exists(p) {
			t.Errorf("%s not archived", filepath.Base(p))
		}
		if m, _ := filepath.Glob(p + resetInfix + "*"); len(m) != 1 {
			t.Errorf("archive of %s: %v", filepath.Base(p), m)
		}
	}
	if fileHash(t, f.transcript(0)) != hash {
		t.Error("the re-created session's transcript changed")
	}
}

// TestCheckUnrenamedArchive: a session archived in archive.json whose
// transcript kept its live name is renamed to the archived name.
func TestCheckUnrenamedArchive(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one"})
	m := openTestManager(t, f.state, Options{})
	if _, err := mustStore(t, m, "main").Reset(context.Background(), f.keys[0], sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	must(t, m.Close())
	archived, _ := filepath.Glob(f.transcript(0) + resetInfix + "*")
	if len(archived) != 1 {
		t.Fatalf("archived files %v", archived)
	}
	must(t, os.Rename(archived[0], f.transcript(0)))

	ps := wantCodes(t, f.state, sessions.CodeUnrenamedArchive)
	if !strings.Contains(ps[0].Fix, filepath.Base(archived[0])) {
		t.Errorf("fix %q", ps[0].Fix)
	}
	repairAll(t, f.state, ps)
	if !exists(archived[0]) || exists(f.transcript(0)) {
		t.Error("not renamed back to its archived name")
	}
}

// TestCheckIndexUnreadable: an index that does not parse is kept as
// sessions.json.corrupt.<ts> and rebuilt from the transcripts.
func TestCheckIndexUnreadable(t *testing.T) {
	f := seedCheck(t, time.Now().Add(-time.Hour), []string{"one"}, []string{"two", "three"})
	indexPath := filepath.Join(f.dir, indexName)
	must(t, os.WriteFile(indexPath, []byte(`{"agent:main:telegram:direct:peer-0": {"sessionId": `), 0o600))

	ps := wantCodes(t, f.state, sessions.CodeIndexUnreadable+" "+sessions.CodeOrphanTranscript+" "+sessions.CodeOrphanTranscript)
	if ps[0].Code != sessions.CodeIndexUnreadable {
		t.Errorf("the index problem comes first (its repair precedes the re-creations): %s", describe(ps))
	}
	repairAll(t, f.state, ps)
	if m, _ := filepath.Glob(indexPath + ".corrupt.*"); len(m) != 1 {
		t.Errorf("quarantined index: %v", m)
	}
	idx := f.index(t)
	for i, k := range f.keys {
		if idx[k.String()].SessionID != f.ids[i] {
			t.Errorf("entry of %s after rebuild: %+v", k, idx[k.String()])
		}
	}
	if got := idx[f.keys[1].String()].MessageCount; got != 4 {
		t.Errorf("rebuilt messageCount %d, want 4", got)
	}
}

// TestCheckSettleSparesATurnInFlight: a running daemon coalesces a turn's
// counters for up to its flush interval after the transcript lines, so a
// check beside it sees the entry behind its transcript for a moment. With
// Settle (gateway doctor's) a transcript written that recently is not
// reported; without it, or once its last write is older than Settle, it is.
func TestCheckSettleSparesATurnInFlight(t *testing.T) {
	now := time.Now()
	f := seedCheck(t, now, []string{"one", "two"})
	idx := f.index(t)
	e := idx[f.keys[0].String()]
	e.MessageCount = 2
	idx[f.keys[0].String()] = e
	f.writeIndex(t, idx)
	now = time.Now() // the transcripts' mtime: their last write

	if got := codes(mustCheck(t, f.state, sessions.CheckOptions{Now: now, Settle: sessions.DefaultSettle})); got != "" {
		t.Errorf("a turn written just now, with Settle: %q, want nothing", got)
	}
	if got := codes(mustCheck(t, f.state, sessions.CheckOptions{Now: now})); got != sessions.CodeCounterLag {
		t.Errorf("without Settle: %q, want the counter lag", got)
	}
	later := sessions.CheckOptions{Now: now.Add(2 * sessions.DefaultSettle), Settle: sessions.DefaultSettle}
	if got := codes(mustCheck(t, f.state, later)); got != sessions.CodeCounterLag {
		t.Errorf("a transcript older than Settle: %q, want the counter lag", got)
	}
}
