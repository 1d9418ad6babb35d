package lanes

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// eventLog is an ordered log of what happened, shared by runs and Do.
type eventLog struct {
	mu sync.Mutex
	ev []string
}

func (e *eventLog) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ev = append(e.ev, s)
}

func (e *eventLog) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.ev...)
}

func TestDoSerialisedWithRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ev eventLog
		gate := make(chan struct{})
		q := New(Options[string]{
			Settings: fixed(Settings{Mode: Followup}),
			Run: func(ctx context.Context, b Batch[string]) {
				ev.add("start " + b.Items[0].ID)
				if b.Items[0].ID == "a" {
					<-gate
				}
				ev.add("end " + b.Items[0].ID)
			},
		})
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		mustEnqueue(t, q, "k", item("c", ""))
		var wg sync.WaitGroup
		wg.Go(func() {
			err := q.Do(t.Context(), "k", func(context.Context) { ev.add("do") })
			if err != nil {
				t.Errorf("Do: %v", err)
			}
		})
		synctest.Wait()
		if diff := cmp.Diff([]string{"start a"}, ev.get()); diff != "" {
			t.Errorf("Do did not wait for the active run (-want +got):\n%s", diff)
		}
		close(gate)
		wg.Wait()
		synctest.Wait()
		want := []string{"start a", "end a", "do", "start b", "end b", "start c", "end c"}
		if diff := cmp.Diff(want, ev.get()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

func TestDoTakesNoSlotAndHoldsTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Caps: map[Class]int{ClassMain: 1}})
		r.gate("a")
		mustEnqueue(t, q, "busy", item("a", "")) // takes the only slot
		ran := false
		if err := q.Do(t.Context(), "other", func(context.Context) {
			ran = true
			// Items arriving during Do wait for it.
			mustEnqueue(t, q, "other", item("b", ""))
			synctest.Wait()
			if n := len(r.got()); n != 1 {
				t.Errorf("%d batches started during Do, want 1", n)
			}
		}); err != nil {
			t.Fatalf("Do: %v", err)
		}
		if !ran {
			t.Fatal("Do with the class cap reached did not run fn")
		}
		r.release("a")
		time.Sleep(2 * time.Second)
		want := []batchRec{{Key: "busy", IDs: []string{"a"}}, {Key: "other", IDs: []string{"b"}, At: time.Second}}
		if diff := cmp.Diff(want, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		shutdown(t, q)
	})
}

func TestDoContextEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run})
		r.gate("a")
		mustEnqueue(t, q, "k", item("a", ""))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := q.Do(ctx, "k", func(context.Context) { t.Error("fn ran although ctx ended") })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do = %v, want DeadlineExceeded", err)
		}
		r.release("a")
		synctest.Wait()
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: Collect})})
		var seen errBox
		r.hook = func(ctx context.Context, b Batch[string]) {
			<-ctx.Done()
			seen.add(ctx.Err())
		}
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		mustEnqueue(t, q, "k", item("c", ""))
		got := q.Cancel("k")
		var ids []string
		for _, it := range got {
			ids = append(ids, it.ID)
		}
		if diff := cmp.Diff([]string{"b", "c"}, ids); diff != "" {
			t.Errorf("Cancel returned (-want +got):\n%s", diff)
		}
		time.Sleep(5 * time.Second)
		if errs := seen.get(); len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
			t.Errorf("cancelled run saw %v, want [context.Canceled]", errs)
		}
		if diff := cmp.Diff([]batchRec{{Key: "k", IDs: []string{"a"}}}, r.got()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		if q.Cancel("idle") != nil {
			t.Error("Cancel of an unknown key returned items")
		}
		assertForgotten(t, q)
		shutdown(t, q)
	})
}

func TestShutdownDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runErr errBox
		q := New(Options[string]{
			Settings: fixed(Settings{Mode: Followup}),
			Run: func(ctx context.Context, b Batch[string]) {
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
				runErr.add(ctx.Err())
			},
		})
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		mustEnqueue(t, q, "k", item("c", ""))
		mustEnqueue(t, q, "j", item("d", ""))
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		left := q.Shutdown(ctx)
		if d := time.Since(t0); d != time.Second {
			t.Errorf("Shutdown took %v, want the 1s of the active runs", d)
		}
		if diff := cmp.Diff([]error{nil, nil}, runErr.get(), cmpopts.EquateErrors()); diff != "" {
			t.Errorf("runs inside the grace period saw ctx errors (-want +got):\n%s", diff)
		}
		var ids []string
		for _, it := range left {
			ids = append(ids, it.ID)
		}
		if diff := cmp.Diff([]string{"b", "c"}, ids); diff != "" {
			t.Errorf("Shutdown returned (-want +got):\n%s", diff)
		}
		if err := q.Enqueue("k", ClassMain, item("e", "")); !errors.Is(err, ErrClosed) {
			t.Errorf("Enqueue after Shutdown = %v, want ErrClosed", err)
		}
		if err := q.Do(t.Context(), "k", func(context.Context) {}); !errors.Is(err, ErrClosed) {
			t.Errorf("Do after Shutdown = %v, want ErrClosed", err)
		}
		assertForgotten(t, q)
	})
}

func TestShutdownCancelsAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runErr error
		q := New(Options[string]{Run: func(ctx context.Context, b Batch[string]) {
			<-ctx.Done()
			runErr = ctx.Err()
		}})
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", "")) // collect, queued behind a
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		left := q.Shutdown(ctx)
		if d := time.Since(t0); d != 2*time.Second {
			t.Errorf("Shutdown took %v, want the 2s grace period", d)
		}
		if !errors.Is(runErr, context.Canceled) {
			t.Errorf("run saw %v after the grace period, want context.Canceled", runErr)
		}
		if len(left) != 1 || left[0].ID != "b" {
			t.Errorf("Shutdown returned %v, want [b]", left)
		}
	})
}

// A run's work handed on with Next is the queue's too: Shutdown waits for
// a Next fn as for a run (one that finishes within the grace period runs
// to its end, its lane forgotten once Shutdown returns), and at the end of
// the grace period cancels one still running, with cause ErrClosed.
func TestShutdownWaitsForNextFns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		var quickDone bool
		if err := q.Next(t.Context(), "quick", func(ctx context.Context) {
			time.Sleep(time.Second)
			quickDone = true
		}); err != nil {
			t.Fatal(err)
		}
		var cause error
		if err := q.Next(t.Context(), "slow", func(ctx context.Context) {
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // returns soon after, not at once
			cause = context.Cause(ctx)
		}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		q.Shutdown(ctx)
		if d := time.Since(t0); d != 2100*time.Millisecond {
			t.Errorf("Shutdown took %v, want the 2s grace period and the slow fn's 100ms", d)
		}
		if !quickDone {
			t.Error("Shutdown returned before a Next fn within the grace period ended")
		}
		if !errors.Is(cause, ErrClosed) {
			t.Errorf("a Next fn past the grace period saw cause %v, want ErrClosed", cause)
		}
		assertForgotten(t, q)
		if err := q.Next(t.Context(), "late", func(context.Context) { t.Error("a Next after Shutdown ran") }); !errors.Is(err, ErrClosed) {
			t.Errorf("Next after Shutdown: %v, want ErrClosed", err)
		}
	})
}

func TestSlowWaitLoggedAndReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		var mu sync.Mutex
		var waits []time.Duration
		q := New(Options[string]{
			Caps:   map[Class]int{ClassMain: 1},
			Logger: zap.New(core),
			Run:    func(ctx context.Context, b Batch[string]) { time.Sleep(3 * time.Second) },
			OnWait: func(c Class, d time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				if c != ClassMain {
					t.Errorf("OnWait class %q", c)
				}
				waits = append(waits, d)
			},
		})
		mustEnqueue(t, q, "k1", item("a", ""))
		mustEnqueue(t, q, "k2", item("b", ""))
		time.Sleep(10 * time.Second)
		mu.Lock()
		got := append([]time.Duration(nil), waits...)
		mu.Unlock()
		if diff := cmp.Diff([]time.Duration{0, 3 * time.Second}, got); diff != "" {
			t.Errorf("OnWait (-want +got):\n%s", diff)
		}
		slow := logs.FilterField(zap.Int64("lane_wait_ms", 3000)).All()
		if len(slow) != 1 || slow[0].ContextMap()["session_key"] != "k2" {
			t.Errorf("slow-wait log entries = %v, want one for k2 with lane_wait_ms=3000", slow)
		}
		if n := logs.Len(); n != 1 {
			t.Errorf("%d log entries, want only the slow wait", n)
		}
		shutdown(t, q)
	})
}

func TestRunPanicDoesNotWedgeLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.hook = func(ctx context.Context, b Batch[string]) {
			if b.Items[0].ID == "a" {
				panic("boom")
			}
		}
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: Followup})})
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		synctest.Wait()
		if n := len(r.got()); n != 2 {
			t.Errorf("%d batches after a panicking run, want 2", n)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

// Next called from a run hands the run's work on: fn runs right after the
// run returns, before the items queued meanwhile, without a class slot
// (another key's batch takes the only slot while fn waits).
func TestNextRunsBeforeQueuedItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ev eventLog
		release := make(chan struct{})
		var q *Queue[string]
		q = New(Options[string]{
			Settings: fixed(Settings{Mode: Followup}),
			Caps:     map[Class]int{ClassMain: 1},
			Run: func(ctx context.Context, b Batch[string]) {
				id := b.Items[0].ID
				ev.add("start " + id)
				if id == "a" {
					mustEnqueue(t, q, "k", item("b", "")) // queued behind the hand-on
					if err := q.Next(t.Context(), "k", func(context.Context) {
						ev.add("next")
						<-release
						ev.add("next done")
					}); err != nil {
						t.Errorf("Next: %v", err)
					}
				}
				ev.add("end " + id)
			},
		})
		mustEnqueue(t, q, "k", item("a", ""))
		synctest.Wait()
		mustEnqueue(t, q, "other", item("x", "")) // the slot is free while next waits
		synctest.Wait()
		close(release)
		synctest.Wait()
		want := []string{"start a", "end a", "next", "start x", "end x", "next done", "start b", "end b"}
		if diff := cmp.Diff(want, ev.get()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		shutdown(t, q)
		if err := q.Next(t.Context(), "k", func(context.Context) { t.Error("fn ran after Shutdown") }); !errors.Is(err, ErrClosed) {
			t.Errorf("Next after Shutdown = %v, want ErrClosed", err)
		}
		assertForgotten(t, q)
	})
}

// Cancel ends the wait of the work a run handed on with Next, as it ends
// the run itself: fn's context is cancelled, whether fn runs already or
// still waits for its turn.
func TestCancelCancelsNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ev eventLog
		release := make(chan struct{})
		var q *Queue[string]
		q = New(Options[string]{
			Settings: fixed(Settings{Mode: Followup}),
			Run: func(ctx context.Context, b Batch[string]) {
				if b.Items[0].ID != "a" {
					return
				}
				for _, name := range []string{"first", "second"} {
					if err := q.Next(t.Context(), "k", func(ctx context.Context) {
						ev.add(name + " runs")
						<-ctx.Done()
						ev.add(name + " cancelled")
					}); err != nil {
						t.Errorf("Next: %v", err)
					}
				}
				<-release
			},
		})
		mustEnqueue(t, q, "k", item("a", ""))
		synctest.Wait()
		close(release)
		synctest.Wait() // first runs; second waits for its turn
		if got := q.Cancel("k"); len(got) != 0 {
			t.Errorf("Cancel returned %d items, want none", len(got))
		}
		synctest.Wait()
		want := []string{"first runs", "first cancelled", "second runs", "second cancelled"}
		if diff := cmp.Diff(want, ev.get()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		// A later Next is not cancelled by the earlier Cancel.
		done := make(chan error, 1)
		if err := q.Next(t.Context(), "k", func(ctx context.Context) { done <- ctx.Err() }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Errorf("a Next after Cancel got ctx error %v", err)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}

// TestBusyKeyDoesNotStarveOthers: under the class cap a key with a long
// queue takes its turn in line like any other: a key that queued while
// the busy one ran goes next, not after the busy key's whole queue.
func TestBusyKeyDoesNotStarveOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		q := New(Options[string]{Run: r.run, Settings: fixed(Settings{Mode: Followup}), Caps: map[Class]int{ClassMain: 1}})
		r.gate("a1")
		mustEnqueue(t, q, "a", item("a1", ""))
		synctest.Wait()
		for _, id := range []string{"a2", "a3", "a4"} {
			mustEnqueue(t, q, "a", item(id, ""))
		}
		mustEnqueue(t, q, "b", item("b1", ""))
		mustEnqueue(t, q, "c", item("c1", ""))
		r.release("a1")
		synctest.Wait()
		var got []string
		for _, b := range r.got() {
			got = append(got, b.IDs...)
		}
		want := []string{"a1", "b1", "c1", "a2", "a3", "a4"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("run order (-want +got):\n%s", diff)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}
