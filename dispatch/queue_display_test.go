package dispatch

import (
	"slices"
	"testing"

	"github.com/gateway/gateway/lanes"
)

// TestQueueAnswerShowsTheDebounceInForce (SPEC §4, §6.1 /queue, /status):
// a queue configuration without a debounce (or with 0) runs with the
// default quiet window, 1 s (the lanes take a zero as the default); /queue
// says so, not "0s", which would promise no window at all.
func TestQueueAnswerShowsTheDebounceInForce(t *testing.T) {
	h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: lanes.Collect, Cap: 20, Drop: lanes.DropSummarize}))
	h.handle(in("tg", "103", "/queue"))
	h.drained()
	want := []string{"Queue: collect (debounce 1s, cap 20, drop summarize)"}
	if got := h.tg.texts(); !slices.Equal(got, want) {
		t.Errorf("/queue answered %q, want %q", got, want)
	}
}
