package lanes

import (
	"testing"
)

// TestSnapshot: runs per class, items queued, and the keys with the
// longest queues first.
func TestSnapshot(t *testing.T) {
	rec := newRecorder()
	q := New(Options[string]{Run: rec.run, Caps: map[Class]int{ClassMain: 1},
		Settings: func(string) Settings { s := DefaultSettings(); s.Mode = Followup; return s }})
	rec.gate("a1")
	defer func() {
		rec.release("a1")
		shutdown(t, q)
	}()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(q.Enqueue("a", ClassMain, Item{ID: "a1"}))
	// The first item of an idle key starts within Enqueue.
	if s := q.Snapshot(0); s.Running[ClassMain] != 1 || s.Top != nil {
		t.Fatalf("one run: %+v", s)
	}
	must(q.Enqueue("a", ClassMain, Item{ID: "a2"}))
	for _, id := range []string{"b1", "b2", "b3"} {
		must(q.Enqueue("b", ClassMain, Item{ID: id}))
	}
	must(q.Enqueue("c", ClassMain, Item{ID: "c1"}))
	s := q.Snapshot(2)
	if s.Running[ClassMain] != 1 || s.Caps[ClassMain] != 1 || s.Queued != 5 || s.Keys != 3 || s.Waiting != 2 {
		t.Fatalf("snapshot: %+v", s)
	}
	if len(s.Top) != 2 || s.Top[0].Key != "b" || s.Top[0].Queued != 3 || s.Top[1].Key != "a" || !s.Top[1].Running {
		t.Fatalf("top: %+v", s.Top)
	}
}
