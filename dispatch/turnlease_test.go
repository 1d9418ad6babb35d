package dispatch

import (
	"slices"
	"testing"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// splitBatch keeps the work before the held-back records (and a command
// among it) for now, and the held-back records with what follows them for
// later, splitting a burst bundle between its parts.
func TestSplitBatch(t *testing.T) {
	burst := bundle([]*work{{RecordID: "r1"}, {RecordID: "r3"}})
	b := laneBatch{Key: routing.Key{Agent: "main", Main: "k"}, Items: []lanes.Item{
		{ID: "a", Payload: &work{RecordID: "r0"}},
		{ID: "c", Payload: &work{chatMessage: chatMessage{Command: "status"}}},
		{ID: "b", Payload: burst},
		{ID: "d", Payload: &work{chatMessage: chatMessage{Command: "new"}}},
		{ID: "e", Payload: &work{RecordID: "r4"}},
	}}
	now, rest := splitBatch(b, []string{"r3", "r4"})
	ids := func(b laneBatch) []string {
		var out []string
		for _, it := range b.Items {
			for _, w := range expand(it.Payload.(*work)) {
				out = append(out, w.RecordID+w.Command)
			}
		}
		return out
	}
	if got, want := ids(now), []string{"r0", "status", "r1"}; !slices.Equal(got, want) {
		t.Errorf("now = %v, want %v", got, want)
	}
	if got, want := ids(rest), []string{"r3", "new", "r4"}; !slices.Equal(got, want) {
		t.Errorf("later = %v, want %v", got, want)
	}
	if now, rest := splitBatch(b, nil); len(now.Items) != len(b.Items) || len(rest.Items) != 0 {
		t.Errorf("nothing held back: now %d items, later %d", len(now.Items), len(rest.Items))
	}
}

// sortBatch puts the messages of a batch in accept order around the
// commands, which keep their places.
func TestSortBatch(t *testing.T) {
	b := laneBatch{Items: []lanes.Item{
		{Payload: &work{RecordID: "r38"}},
		{Payload: &work{chatMessage: chatMessage{Command: "status"}}},
		{Payload: &work{RecordID: "r37"}},
		{Payload: &work{RecordID: "r39"}},
	}}
	got := sortBatch(b, []string{"r37", "r38", "r39"})
	var ids []string
	for _, it := range got.Items {
		w := it.Payload.(*work)
		ids = append(ids, w.RecordID+w.Command)
	}
	if want := []string{"r37", "status", "r38", "r39"}; !slices.Equal(ids, want) {
		t.Errorf("sorted batch %v, want %v", ids, want)
	}
	if first := b.Items[0].Payload.(*work).RecordID; first != "r38" {
		t.Errorf("sortBatch changed its argument's items: first is %s", first)
	}
}
