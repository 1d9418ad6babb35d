package lanes

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// TestSteerLeavesNoDroppedBehind (SPEC §4): in steer mode, an item the
// cap dropped with a summary while the run was active is handed to a
// batch even when the run steered in every item queued after it. The
// dropped item waited in the lane with nothing to run it, its message
// unanswered until the session's next message came (or forever).
func TestSteerLeavesNoDroppedBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []batchRec
		step := make(chan struct{})
		run := func(ctx context.Context, b Batch[string]) {
			rec := batchRec{Key: b.Key}
			for _, it := range b.Items {
				rec.IDs = append(rec.IDs, it.ID)
			}
			for _, it := range b.Dropped {
				rec.Dropped = append(rec.Dropped, it.ID)
			}
			mu.Lock()
			got = append(got, rec)
			mu.Unlock()
			if len(b.Items) > 0 && b.Items[0].ID == "a" {
				<-step // the model call during which b, c, d arrive
				var ids []string
				for _, it := range b.Steer() { // before the next model call
					ids = append(ids, it.ID)
				}
				if diff := cmp.Diff([]string{"c", "d"}, ids); diff != "" {
					t.Errorf("steered (-want +got):\n%s", diff)
				}
			}
		}
		q := New(Options[string]{Run: run, Settings: fixed(Settings{Mode: Steer, Cap: 2, Drop: DropSummarize})})
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		mustEnqueue(t, q, "k", item("c", ""))
		mustEnqueue(t, q, "k", item("d", "")) // past the cap: b is dropped with a summary
		step <- struct{}{}
		synctest.Wait()
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}},
			{Key: "k", Dropped: []string{"b"}},
		}
		mu.Lock()
		diff := cmp.Diff(want, got)
		mu.Unlock()
		if diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		if left := shutdown(t, q); len(left) != 0 {
			t.Errorf("Shutdown returned %d items, want none (b ran in a batch)", len(left))
		}
		assertForgotten(t, q)
	})
}
