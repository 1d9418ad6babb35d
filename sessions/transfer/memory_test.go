package transfer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/transfer"
)

// TestCopyMemoryResumesAnInterruptedScope: a migration stopped part-way
// through a scope (a crash, a killed command, the target failing) left the
// target the first notes of it; running it again completes the scope
// without --overwrite, as a second run of a finished copy is a no-op,
// rather than refusing it as a scope holding other notes.
func TestCopyMemoryResumesAnInterruptedScope(t *testing.T) {
	ctx := context.Background()
	from := filestore.NewMemory(t.TempDir(), 0)
	to := filestore.NewMemory(t.TempDir(), 0)
	scope := sessions.SenderScope("main", "telegram", "42")
	want := []string{"likes tea", "lives in Lyon", "has a cat"}
	for i, text := range want {
		if _, err := from.AddNote(ctx, scope, text, time.Unix(int64(i), 0), sessions.MemoryLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := to.AddNote(ctx, scope, want[0], time.Unix(0, 0), sessions.MemoryLimits{}); err != nil { // the interrupted copy
		t.Fatal(err)
	}
	n, err := transfer.CopyMemory(ctx, from, to, false)
	if err != nil {
		t.Fatalf("resuming the copy: %v", err)
	}
	if n != 2 {
		t.Errorf("resuming copied %d notes, want the 2 missing", n)
	}
	notes, err := to.Notes(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range notes {
		got = append(got, x.Text)
	}
	if !slices.Equal(got, want) {
		t.Errorf("target after resuming: %q, want %q", got, want)
	}
	if n, err := transfer.CopyMemory(ctx, from, to, false); err != nil || n != 0 {
		t.Errorf("a second run: %d, %v; want nothing copied", n, err)
	}
	// A target scope with notes of its own is still refused.
	other := sessions.SenderScope("main", "telegram", "43")
	if _, err := from.AddNote(ctx, other, "a", time.Unix(0, 0), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := to.AddNote(ctx, other, "b", time.Unix(0, 0), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.CopyMemory(ctx, from, to, false); err == nil {
		t.Error("a target scope holding other notes was not refused")
	}
}
