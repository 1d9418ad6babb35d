package pgstore

import (
	"testing"
)

func TestCursors(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	if _, ok, err := db.GetCursor(ctx, "telegram", "bot1", "offset"); ok || err != nil {
		t.Fatalf("unset cursor: %v %v", ok, err)
	}
	for _, v := range []string{"100", "101", "'; DROP TABLE cursors; --"} {
		if err := db.SetCursor(ctx, "telegram", "bot1", "offset", v); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := db.GetCursor(ctx, "telegram", "bot1", "offset"); !ok || err != nil || got != v {
			t.Errorf("cursor = %q %v %v, want %q", got, ok, err, v)
		}
	}
	if _, ok, _ := db.GetCursor(ctx, "telegram", "bot2", "offset"); ok {
		t.Error("a cursor of another account was returned")
	}
}
