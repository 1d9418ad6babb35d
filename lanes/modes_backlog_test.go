package lanes

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSteerBacklog: the active run is handed the items of its Group at
// each call of Steer, each item once; they stay queued (Steered) and run
// afterwards as one batch per Group, without a quiet window.
func TestSteerBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: SteerBacklog, Debounce: time.Hour})})
		var steered [][]string
		var later []Item
		step := make(chan struct{})
		r.hook = func(ctx context.Context, b Batch[string]) {
			if b.Steer == nil {
				t.Errorf("batch %s without Steer", b.Items[0].ID)
				return
			}
			if b.Items[0].ID != "a" {
				later = append(later, b.Items...)
				return
			}
			for range 2 {
				<-step
				var ids []string
				for _, it := range b.Steer() {
					if !it.Steered {
						t.Errorf("item %s handed without Steered", it.ID)
					}
					ids = append(ids, it.ID)
				}
				steered = append(steered, ids)
			}
		}
		mustEnqueue(t, q, "k", item("a", "g1"))
		mustEnqueue(t, q, "k", item("b", "g1"))
		mustEnqueue(t, q, "k", item("x", "g2"))
		step <- struct{}{}
		synctest.Wait()
		mustEnqueue(t, q, "k", item("c", "g1"))
		if got := q.Depth("k"); got != 3 {
			t.Errorf("Depth = %d, want 3 (b kept, x, c)", got)
		}
		step <- struct{}{}
		synctest.Wait()
		if diff := cmp.Diff([][]string{{"b"}, {"c"}}, steered); diff != "" {
			t.Errorf("steered (-want +got):\n%s", diff)
		}
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}},
			{Key: "k", IDs: []string{"b", "c"}},
			{Key: "k", IDs: []string{"x"}},
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		for _, it := range later {
			if it.Steered != (it.ID != "x") {
				t.Errorf("later batch item %s Steered=%v, want %v", it.ID, it.Steered, it.ID != "x")
			}
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

// TestFIFO: queue mode runs one batch per item in arrival order, Groups
// never merged, with no quiet window whatever Debounce says.
func TestFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: FIFO, Debounce: time.Hour})})
		r.gate("a")
		for _, it := range []Item{item("a", "g1"), item("b", "g1"), item("c", "g2"), item("d", "g1")} {
			mustEnqueue(t, q, "k", it)
		}
		time.Sleep(100 * ms)
		r.release("a")
		synctest.Wait()
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}},
			{Key: "k", IDs: []string{"b"}, At: 100 * ms},
			{Key: "k", IDs: []string{"c"}, At: 100 * ms},
			{Key: "k", IDs: []string{"d"}, At: 100 * ms},
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

// TestSteerBacklogAlias: the reference system's "steer+backlog" is
// steer-backlog.
func TestSteerBacklogAlias(t *testing.T) {
	if got := (Settings{Mode: "steer+backlog"}).normalized().Mode; got != SteerBacklog {
		t.Errorf("steer+backlog normalized to %q, want %q", got, SteerBacklog)
	}
}

// TestSteerBacklogItemsOutsideCap: in steer-backlog mode the items handed
// to the active run stay queued for their follow-up turn, but they do not
// take places under the cap (drop=new accepts a new message once the
// queued ones were steered) and the overflow policy never drops them (the
// model saw them; dropping one would lose its follow-up).
func TestSteerBacklogItemsOutsideCap(t *testing.T) {
	for _, drop := range []Drop{DropNew, DropOld} {
		t.Run(string(drop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRecorder()
				var dropped []string
				step := make(chan struct{})
				q := New(Options[string]{
					Run:      r.run,
					Settings: fixed(Settings{Mode: SteerBacklog, Debounce: time.Hour, Cap: 1, Drop: drop}),
					OnDrop:   func(_ string, it Item) { dropped = append(dropped, it.ID) },
				})
				r.hook = func(ctx context.Context, b Batch[string]) {
					if b.Items[0].ID == "a" {
						<-step
						b.Steer()
						<-step
					}
				}
				mustEnqueue(t, q, "k", item("a", "g1"))
				mustEnqueue(t, q, "k", item("b", "g1"))
				step <- struct{}{} // b handed to a's run
				synctest.Wait()
				mustEnqueue(t, q, "k", item("c", "g1"))
				if drop == DropOld {
					mustEnqueue(t, q, "k", item("d", "g1")) // c overflows, never b
				}
				step <- struct{}{}
				synctest.Wait()
				want := []batchRec{{Key: "k", IDs: []string{"a"}}, {Key: "k", IDs: []string{"b", "c"}}}
				var wantDropped []string
				if drop == DropOld {
					want[1].IDs = []string{"b", "d"}
					wantDropped = []string{"c"}
				}
				shutdown(t, q)
				if diff := cmp.Diff(want, r.got()); diff != "" {
					t.Errorf("batches (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(wantDropped, dropped); diff != "" {
					t.Errorf("dropped (-want +got):\n%s", diff)
				}
			})
		})
	}
}
