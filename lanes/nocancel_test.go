package lanes

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// TestInterruptSparesNoCancelRun: in interrupt mode a newer item does not
// cancel a run whose items are all NoCancel (a chat command such as
// /compact); the newer item runs after it. Cancel (/stop) still cancels
// such a run.
func TestInterruptSparesNoCancelRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, OnDrop: r.onDrop, Settings: fixed(Settings{Mode: Interrupt})})
		var seen []error
		release := make(chan struct{})
		r.hook = func(ctx context.Context, b Batch[string]) {
			switch b.Items[0].ID {
			case "compact":
				<-release
				seen = append(seen, ctx.Err())
			case "compact2":
				<-ctx.Done()
				seen = append(seen, ctx.Err())
			}
		}
		cmd := func(id string) Item { it := item(id, ""); it.NoInterrupt, it.NoCancel = true, true; return it }
		mustEnqueue(t, q, "k", cmd("compact"))
		synctest.Wait()
		mustEnqueue(t, q, "k", item("b", ""))
		close(release)
		synctest.Wait()
		mustEnqueue(t, q, "k", cmd("compact2"))
		synctest.Wait()
		q.Cancel("k")
		synctest.Wait()
		if len(seen) != 2 || seen[0] != nil || seen[1] != context.Canceled {
			t.Errorf("runs saw %v, want <nil> (not interrupted) then context.Canceled (Cancel)", seen)
		}
		want := []batchRec{{Key: "k", IDs: []string{"compact"}}, {Key: "k", IDs: []string{"b"}}, {Key: "k", IDs: []string{"compact2"}}}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		shutdown(t, q)
	})
}
