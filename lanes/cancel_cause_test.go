package lanes

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestCancelCauseTellsStopFromShutdown: a run cancelled by Cancel (/stop)
// or by interrupt mode has ErrCancelled as its context's cause, one
// cancelled by Shutdown after its grace period has not: a run stopped for
// good must not be taken for one a shutdown interrupted, which runs again
// at the next start.
func TestCancelCauseTellsStopFromShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, q *Queue[string])
		want bool // the cause is ErrCancelled
	}{
		{name: "cancel", stop: func(t *testing.T, q *Queue[string]) { q.Cancel("k"); shutdown(t, q) }, want: true},
		{name: "interrupt", stop: func(t *testing.T, q *Queue[string]) {
			q.opts.Settings = fixed(Settings{Mode: Interrupt})
			mustEnqueue(t, q, "k", item("b", ""))
			synctest.Wait()
			shutdown(t, q)
		}, want: true},
		{name: "shutdown", stop: func(t *testing.T, q *Queue[string]) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			q.Shutdown(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var causes errBox
				q := New(Options[string]{Settings: fixed(Settings{Mode: Followup}), Run: func(ctx context.Context, b Batch[string]) {
					if b.Items[0].ID != "a" {
						return
					}
					<-ctx.Done()
					causes.add(context.Cause(ctx))
				}})
				mustEnqueue(t, q, "k", item("a", ""))
				synctest.Wait()
				tc.stop(t, q)
				got := causes.get()
				if len(got) != 1 || errors.Is(got[0], ErrCancelled) != tc.want {
					t.Errorf("the run's context cause was %v, want ErrCancelled: %v", got, tc.want)
				}
			})
		})
	}
}
