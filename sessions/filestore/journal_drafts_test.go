package filestore

import (
	"encoding/json"
	"github.com/gateway/gateway/sessions"
	"testing"
)

func draftIDs(t *testing.T, j *Journal) []string {
	t.Helper()
	ds, err := j.Drafts()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID+"="+d.MessageID)
	}
	return ids
}

// TestJournalDraftsSurviveACrash: drafts recorded by one process are found
// by the next (not by the one that recorded them); a retired draft and one
// taken over by a ready reply are not; a compaction keeps live drafts.
func TestJournalDraftsSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	j := openTestJournal(t, dir, nil)
	target := json.RawMessage(`{"Channel":"telegram","ChatID":"1"}`)
	for _, d := range []sessions.Draft{{ID: "d1", MessageID: "101"}, {ID: "d2", MessageID: "102"}, {ID: "d3", MessageID: "103"}} {
		d.Target = target
		if err := j.Draft(d); err != nil {
			t.Fatal(err)
		}
	}
	if got := draftIDs(t, j); len(got) != 0 {
		t.Fatalf("drafts of the running process returned: %v", got)
	}
	if err := j.DraftDone("d1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Ready(sessions.Reply{ID: "r1", Target: target, Chunks: []string{"a", "b"}, Draft: "d2"}); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil { // like a crash: nothing more is written
		t.Fatal(err)
	}

	j2 := openTestJournal(t, dir, nil)
	if got, want := draftIDs(t, j2), []string{"d3=103"}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("drafts after restart = %v, want %v", got, want)
	}
	j2.mu.Lock()
	err := j2.compactLocked()
	j2.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := j2.close(); err != nil {
		t.Fatal(err)
	}

	j3 := openTestJournal(t, dir, nil)
	if got := draftIDs(t, j3); len(got) != 1 || got[0] != "d3=103" {
		t.Fatalf("drafts after compaction = %v, want [d3=103]", got)
	}
	if err := j3.DraftDone("d3"); err != nil {
		t.Fatal(err)
	}
	if err := j3.close(); err != nil {
		t.Fatal(err)
	}
	j4 := openTestJournal(t, dir, nil)
	if got := draftIDs(t, j4); len(got) != 0 {
		t.Fatalf("retired draft came back: %v", got)
	}
	rps, _ := j4.Replies()
	if len(rps) != 1 || rps[0].Draft != "d2" {
		t.Fatalf("reply lost its draft: %+v", rps)
	}
}
