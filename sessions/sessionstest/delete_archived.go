package sessionstest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/sessions"
)

// testDeleteArchived: /delete n deletes a session the chat's list numbers,
// not only the current one (issue 27). The record stays in Archived with
// Deleted set and its other fields as they were, survives a second handle
// (durable), and Switch still brings it back.
func testDeleteArchived(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k, other := f.key("g1"), f.key("g2")
	one, _ := f.begin(k, origin("one"))
	f.clk.Advance(time.Minute)
	if _, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	f.begin(k, origin("two"))
	f.begin(other, origin("theirs"))
	before := f.archived(k)
	if len(before) != 1 || before[0].SessionID != one.SessionID || before[0].Deleted {
		t.Fatalf("Archived before = %+v, want %s not deleted", before, one.SessionID)
	}

	for _, id := range []string{uuid.NewString(), "", "../x", f.get(k).SessionID, f.get(other).SessionID} {
		wantNotFound(t, "DeleteArchived of "+clip(id), f.idx.DeleteArchived(f.ctx, k, id))
	}
	if err := f.idx.DeleteArchived(f.ctx, k, one.SessionID); err != nil {
		t.Fatalf("DeleteArchived: %v", err)
	}
	want := before[0]
	want.Deleted, want.Reason = true, "deleted"
	check := func(what string, idx sessions.Index) {
		t.Helper()
		a, err := idx.Archived(k)
		if err != nil || len(a) != 1 || a[0] != want {
			t.Errorf("%s: Archived = %+v, %v; want [%+v]", what, a, err, want)
		}
	}
	check("after DeleteArchived", f.idx)
	if err := f.idx.DeleteArchived(f.ctx, k, one.SessionID); err != nil {
		t.Errorf("DeleteArchived twice: %v, want nil (already deleted)", err)
	}
	check("after a second DeleteArchived", f.idx)
	check("through a second handle", open(t, Options{Now: f.clk.Now, Share: f.idx}))

	back, err := f.idx.Switch(f.ctx, k, one.SessionID)
	if err != nil || back.SessionID != one.SessionID || back.Title != "one" {
		t.Errorf("Switch to the deleted archived session = %s %q, %v; want it back", back.SessionID, back.Title, err)
	}
}
