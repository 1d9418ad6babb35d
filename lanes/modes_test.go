package lanes

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = time.Millisecond

func TestCollect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: Collect, Debounce: time.Second})})
		r.gate("a")
		mustEnqueue(t, q, "k", item("a", "g1"))
		time.Sleep(100 * ms)
		mustEnqueue(t, q, "k", item("b", "g1"))
		time.Sleep(100 * ms)
		mustEnqueue(t, q, "k", item("c", "g2"))
		time.Sleep(100 * ms)
		mustEnqueue(t, q, "k", item("d", "g1")) // last arrival at 300ms
		time.Sleep(200 * ms)
		r.release("a") // run ends at 500ms, quiet window ends at 1300ms
		time.Sleep(500 * ms)
		synctest.Wait()
		if n := len(r.got()); n != 1 {
			t.Fatalf("%d batches before the quiet window ended, want 1", n)
		}
		time.Sleep(time.Second)
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}, At: 0}, // idle key: no debounce
			{Key: "k", IDs: []string{"b", "d"}, At: 1300 * ms},
			{Key: "k", IDs: []string{"c"}, At: 1300 * ms}, // other thread, never merged
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		if left := shutdown(t, q); len(left) != 0 {
			t.Errorf("Shutdown returned %d items, want 0", len(left))
		}
		assertForgotten(t, q)
	})
}

func TestCollectQuietWindowMovesWithArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run}) // default settings: collect, 1 s
		r.gate("a")
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		r.release("a")
		time.Sleep(800 * ms)
		mustEnqueue(t, q, "k", item("c", "")) // arrives inside the window: it moves
		time.Sleep(3 * time.Second)
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}, At: 0},
			{Key: "k", IDs: []string{"b", "c"}, At: 1800 * ms},
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		shutdown(t, q)
	})
}

func TestFollowup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: Followup})})
		r.gate("a")
		mustEnqueue(t, q, "k", item("a", "g1"))
		mustEnqueue(t, q, "k", item("b", "g1"))
		mustEnqueue(t, q, "k", item("c", "g2"))
		mustEnqueue(t, q, "k", item("d", "g1"))
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

func TestSteer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: Steer})})
		var steered [][]string
		var after []Item
		var steerA func() []Item
		step := make(chan struct{})
		r.hook = func(ctx context.Context, b Batch[string]) {
			if b.Items[0].ID != "a" {
				return
			}
			if b.Steer == nil {
				t.Error("steer batch without Steer")
				return
			}
			steerA = b.Steer
			for range 2 {
				<-step // "before each model call"
				var ids []string
				for _, it := range b.Steer() {
					ids = append(ids, it.ID)
				}
				steered = append(steered, ids)
			}
		}
		mustEnqueue(t, q, "k", item("a", "g1"))
		mustEnqueue(t, q, "k", item("b", "g1"))
		mustEnqueue(t, q, "k", item("x", "g2"))
		mustEnqueue(t, q, "k", item("c", "g1"))
		step <- struct{}{}
		synctest.Wait()
		mustEnqueue(t, q, "k", item("d", "g1"))
		if got := q.Depth("k"); got != 2 {
			t.Errorf("Depth = %d, want 2 (x, d)", got)
		}
		if got := q.MaxDepth(); got != 2 {
			t.Errorf("MaxDepth = %d, want 2 (k's x, d)", got)
		}
		step <- struct{}{}
		synctest.Wait()
		mustEnqueue(t, q, "k", item("e", "g1")) // after the last model call
		after = steerA()                        // run a has ended
		synctest.Wait()
		if diff := cmp.Diff([][]string{{"b", "c"}, {"d"}}, steered); diff != "" {
			t.Errorf("steered (-want +got):\n%s", diff)
		}
		if len(after) != 0 {
			t.Errorf("Steer after the run ended returned %v", after)
		}
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}},
			{Key: "k", IDs: []string{"x"}},
			{Key: "k", IDs: []string{"e"}},
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

func TestSteerStopsAtNoSteer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: Steer})})
		var steered []string
		r.hook = func(ctx context.Context, b Batch[string]) {
			if b.Items[0].ID != "a" {
				return
			}
			time.Sleep(time.Second)
			for _, it := range b.Steer() {
				steered = append(steered, it.ID)
			}
		}
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		cmd := item("cmd", "")
		cmd.NoSteer = true
		mustEnqueue(t, q, "k", cmd)
		mustEnqueue(t, q, "k", item("c", ""))
		time.Sleep(2 * time.Second)
		shutdown(t, q) // waits for the runs: steered is safe to read
		if diff := cmp.Diff([]string{"b"}, steered); diff != "" {
			t.Errorf("steered (-want +got):\n%s", diff)
		}
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}},
			{Key: "k", IDs: []string{"cmd", "c"}, At: time.Second},
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
	})
}

func TestInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, OnDrop: r.onDrop, Settings: fixed(Settings{Mode: Interrupt})})
		var seen error
		// a's run returns only once c is queued too: else the lane may
		// start b between the two enqueues (b then ran, not dropped).
		release := make(chan struct{})
		r.hook = func(ctx context.Context, b Batch[string]) {
			if b.Items[0].ID == "a" {
				<-ctx.Done() // a model call observing cancellation
				seen = ctx.Err()
				<-release
			}
		}
		mustEnqueue(t, q, "k", item("a", ""))
		synctest.Wait()
		mustEnqueue(t, q, "k", item("b", ""))
		mustEnqueue(t, q, "k", item("c", ""))
		close(release)
		synctest.Wait()
		if !errors.Is(seen, context.Canceled) {
			t.Errorf("interrupted run saw ctx error %v, want context.Canceled", seen)
		}
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}},
			{Key: "k", IDs: []string{"c"}, Dropped: []string{"sum b"}},
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		if got := r.gotDropped(); len(got) != 0 {
			t.Errorf("OnDrop got %v, want none: b is the next batch's (Batch.Dropped)", got)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

func TestCapDrop(t *testing.T) {
	tests := []struct {
		name        string
		drop        Drop
		wantErr     error
		wantBatch   batchRec
		wantOnDrop  []string
		wantDepthAt int
	}{
		{
			name:      "summarize",
			drop:      DropSummarize,
			wantBatch: batchRec{Key: "k", IDs: []string{"c", "d"}, Dropped: []string{"sum b"}},
		},
		{
			name:       "old",
			drop:       DropOld,
			wantBatch:  batchRec{Key: "k", IDs: []string{"c", "d"}},
			wantOnDrop: []string{"b"},
		},
		{
			name:      "new",
			drop:      DropNew,
			wantErr:   ErrFull,
			wantBatch: batchRec{Key: "k", IDs: []string{"b", "c"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRecorder()
				q := New(Options[string]{Run: r.run, OnDrop: r.onDrop,
					Settings: fixed(Settings{Mode: Collect, Debounce: -1, Cap: 2, Drop: tc.drop})})
				r.gate("a")
				mustEnqueue(t, q, "k", item("a", ""))
				mustEnqueue(t, q, "k", item("b", ""))
				mustEnqueue(t, q, "k", item("c", ""))
				if err := q.Enqueue("k", ClassMain, item("d", "")); !errors.Is(err, tc.wantErr) {
					t.Errorf("Enqueue(d) = %v, want %v", err, tc.wantErr)
				}
				if got := q.Depth("k"); got != 2 {
					t.Errorf("Depth = %d, want the cap 2", got)
				}
				r.release("a")
				synctest.Wait()
				want := []batchRec{{Key: "k", IDs: []string{"a"}}, tc.wantBatch}
				if diff := cmp.Diff(want, r.got()); diff != "" {
					t.Errorf("batches (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantOnDrop, r.gotDropped()); diff != "" {
					t.Errorf("OnDrop (-want +got):\n%s", diff)
				}
				shutdown(t, q)
			})
		})
	}
}

// TestCapKeepsKeptItems: the overflow policy drops the oldest items not
// marked Keep; a kept item is neither dropped nor rejected, and the lane
// holds more than its cap while only kept items are left to drop.
func TestCapKeepsKeptItems(t *testing.T) {
	for _, drop := range []Drop{DropSummarize, DropNew} {
		t.Run(string(drop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRecorder()
				q := New(Options[string]{Run: r.run, OnDrop: r.onDrop,
					Settings: fixed(Settings{Mode: Collect, Debounce: -1, Cap: 2, Drop: drop})})
				r.gate("a")
				mustEnqueue(t, q, "k", item("a", ""))
				kept := func(id string) Item { it := item(id, ""); it.Keep = true; return it }
				mustEnqueue(t, q, "k", kept("b"))
				mustEnqueue(t, q, "k", item("c", ""))
				mustEnqueue(t, q, "k", kept("d")) // over the cap: kept items are never refused
				if got := q.Depth("k"); got != 3 {
					t.Errorf("Depth = %d, want 3 (b, c and the kept d)", got)
				}
				err := q.Enqueue("k", ClassMain, item("e", ""))
				want := []batchRec{{Key: "k", IDs: []string{"a"}}, {Key: "k", IDs: []string{"b", "d", "e"}, Dropped: []string{"sum c"}}}
				var wantDropped []string // c goes to the batch (Dropped), not OnDrop
				if drop == DropNew {
					if !errors.Is(err, ErrFull) {
						t.Errorf("Enqueue(e) = %v, want ErrFull", err)
					}
					want[1] = batchRec{Key: "k", IDs: []string{"b", "c", "d"}}
				} else if err != nil {
					t.Errorf("Enqueue(e) = %v", err)
				}
				r.release("a")
				synctest.Wait()
				if diff := cmp.Diff(want, r.got()); diff != "" {
					t.Errorf("batches (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(wantDropped, r.gotDropped()); diff != "" {
					t.Errorf("OnDrop (-want +got):\n%s", diff)
				}
				shutdown(t, q)
			})
		})
	}
}

func TestSettingsReadPerEnqueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		mode := Followup
		q := New(Options[string]{Run: r.run, Settings: func(string) Settings { return Settings{Mode: mode, Debounce: -1} }})
		r.gate("a")
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		mode = Collect // e.g. a /queue override or a config reload
		mustEnqueue(t, q, "k", item("c", ""))
		r.release("a")
		synctest.Wait()
		want := []batchRec{{Key: "k", IDs: []string{"a"}}, {Key: "k", IDs: []string{"b", "c"}}}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		shutdown(t, q)
	})
}

// TestInterruptSparesNoInterrupt: in interrupt mode an item marked
// NoInterrupt neither cancels the active run nor is superseded by a newer
// item; the newer item supersedes only the plain items before it, and
// runs after the NoInterrupt one, in order.
func TestInterruptSparesNoInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, OnDrop: r.onDrop, Settings: fixed(Settings{Mode: Interrupt})})
		var cancelled []error
		release := make(chan struct{})
		r.hook = func(ctx context.Context, b Batch[string]) {
			if b.Items[0].ID == "a" {
				<-release
				cancelled = append(cancelled, ctx.Err())
			}
		}
		cmd := func(id string) Item { it := item(id, ""); it.NoInterrupt = true; return it }
		mustEnqueue(t, q, "k", item("a", ""))
		synctest.Wait()
		mustEnqueue(t, q, "k", cmd("s"))
		mustEnqueue(t, q, "k", item("b", ""))
		mustEnqueue(t, q, "k", cmd("r"))
		mustEnqueue(t, q, "k", item("c", ""))
		close(release)
		synctest.Wait()
		if len(cancelled) != 1 || !errors.Is(cancelled[0], context.Canceled) {
			t.Errorf("a's run saw %v, want context.Canceled (b and c interrupt it)", cancelled)
		}
		want := []batchRec{
			{Key: "k", IDs: []string{"a"}},
			{Key: "k", IDs: []string{"s", "r", "c"}, Dropped: []string{"sum b"}},
		}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}

		// Alone, a NoInterrupt item leaves the active run be.
		r2 := newRecorder()
		q2 := New(Options[string]{Run: r2.run, Settings: fixed(Settings{Mode: Interrupt})})
		var seen error
		release2 := make(chan struct{})
		r2.hook = func(ctx context.Context, b Batch[string]) {
			if b.Items[0].ID == "a" {
				<-release2
				seen = ctx.Err()
			}
		}
		if err := q2.Enqueue("k", ClassMain, item("a", "")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := q2.Enqueue("k", ClassMain, cmd("s")); err != nil {
			t.Fatal(err)
		}
		close(release2)
		synctest.Wait()
		if seen != nil {
			t.Errorf("a's run saw %v: a NoInterrupt item cancelled it", seen)
		}
		want = []batchRec{{Key: "k", IDs: []string{"a"}}, {Key: "k", IDs: []string{"s"}}}
		if diff := cmp.Diff(want, r2.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		shutdown(t, q)
		shutdown(t, q2)
		assertForgotten(t, q)
		assertForgotten(t, q2)
	})
}
