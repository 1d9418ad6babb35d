package lanes

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReloadAppliesToQueuedItems (SPEC §4, §9): settings changed while
// items wait behind a run (a config reload, a /queue override) apply to
// those items when the run ends, not only from the key's next arrival:
// a quiet window shortened from an hour to a second lets the queued
// items run a second after the run, not an hour after their arrival.
func TestReloadAppliesToQueuedItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		var mu sync.Mutex
		set := Settings{Mode: Collect, Debounce: time.Hour}
		q := New(Options[string]{Run: r.run, Settings: func(string) Settings {
			mu.Lock()
			defer mu.Unlock()
			return set
		}})
		r.gate("a")
		mustEnqueue(t, q, "k", item("a", ""))
		mustEnqueue(t, q, "k", item("b", ""))
		mustEnqueue(t, q, "k", item("c", ""))
		mu.Lock()
		set = Settings{Mode: Followup, Debounce: time.Second} // the reload
		mu.Unlock()
		time.Sleep(time.Minute)
		r.release("a")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		var got [][]string
		for _, b := range r.got() {
			got = append(got, b.IDs)
		}
		if diff := cmp.Diff([][]string{{"a"}, {"b"}, {"c"}}, got); diff != "" {
			t.Errorf("batches 10 s after the run (-want +got):\n%s", diff)
		}
		shutdown(t, q)
		assertForgotten(t, q)
	})
}
