package filestore

import (
	"context"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transfer"
	"strings"
	"testing"
	"time"
)

// CopyRooms moves every room's kept history oldest first, skips a room the
// target already holds identically, refuses one it holds otherwise unless
// overwrite, and CompareRooms sees the difference.
func TestCopyRoomsConflictsAndOverwrite(t *testing.T) {
	ctx := context.Background()
	src := openTestManager(t, t.TempDir(), Options{}).History()
	dst := openTestManager(t, t.TempDir(), Options{}).History()
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)
	lim := sessions.HistoryLimits{Count: 3}
	for i, text := range []string{"one", "two", "three", "four"} { // four evicts one
		if _, err := src.Append(ctx, "room-a", sessions.HistoryEntry{MessageID: text, SenderName: "Ann", At: at.Add(time.Duration(i) * time.Second), Text: text}, lim); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Append(ctx, "room-b", sessions.HistoryEntry{MessageID: "x", At: at, Text: "bee"}, lim); err != nil {
		t.Fatal(err)
	}
	n, err := transfer.CopyRooms(ctx, src, dst, false)
	if err != nil || n != 4 {
		t.Fatalf("copy: %d entries, %v; want 4", n, err)
	}
	got, err := dst.Take("room-a", dst.Seq(), everything)
	if err != nil || len(got) != 3 || got[0].Text != "two" || got[2].Text != "four" || !got[0].At.Equal(at.Add(time.Second)) {
		t.Fatalf("room-a in the target: %+v, %v", got, err)
	}
	if n, err := transfer.CopyRooms(ctx, src, dst, false); err != nil || n != 0 {
		t.Fatalf("second copy: %d, %v; want nothing copied", n, err)
	}
	if total, diffs, err := transfer.CompareRooms(ctx, src, dst); err != nil || total != 4 || len(diffs) != 0 {
		t.Fatalf("compare: %d, %v, %v", total, diffs, err)
	}

	// A target holding other history for a room.
	other := openTestManager(t, t.TempDir(), Options{}).History()
	if _, err := other.Append(ctx, "room-b", sessions.HistoryEntry{MessageID: "y", At: at, Text: "other"}, lim); err != nil {
		t.Fatal(err)
	}
	if _, diffs, _ := transfer.CompareRooms(ctx, src, other); len(diffs) != 2 || !strings.Contains(diffs[1], "room-b") {
		t.Errorf("compare with another history: %v", diffs)
	}
	if _, err := transfer.CopyRooms(ctx, src, other, false); err == nil || !strings.Contains(err.Error(), `"room-b"`) || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("conflicting room: %v", err)
	}
	if _, err := transfer.CopyRooms(ctx, src, other, true); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if _, diffs, _ := transfer.CompareRooms(ctx, src, other); len(diffs) != 0 {
		t.Errorf("after overwrite: %v", diffs)
	}
	// A message the target removed before is refused, not silently lost.
	if err := other.Clear("room-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.CopyRooms(ctx, src, other, true); err == nil || !strings.Contains(err.Error(), "redelivery") {
		t.Errorf("copy of a message the target removed: %v", err)
	}
}
