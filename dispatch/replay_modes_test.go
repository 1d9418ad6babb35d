package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// TestRestartAnswersEveryQueuedMessageInEachMode (SPEC §3.7, §4): messages
// journaled and still waiting when the process died are all run after the
// restart, whatever the queue mode: each reaches the model (none is cut
// short by its own backlog replayed behind it), and the journal drains.
// In interrupt mode the replayed messages cancelled and superseded one
// another: the first was stopped before its text reached the transcript,
// finished and never answered, though nobody had sent anything newer
// since the restart.
func TestRestartAnswersEveryQueuedMessageInEachMode(t *testing.T) {
	for _, mode := range lanes.Modes {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: mode, Debounce: 50 * time.Millisecond, Cap: 20, Drop: lanes.DropSummarize}))
			texts := []string{"alpha-one", "bravo-two", "charlie-three"}
			var w *work
			for _, s := range texts {
				w = acceptOnly(t, h, in("tg", "rp-"+string(mode), s))
			}
			h.restart()
			if n, err := h.d.Resume(h.ctx); err != nil || n != len(texts) {
				t.Fatalf("Resume = %d, %v; want %d", n, err, len(texts))
			}
			h.drained()
			var users []string
			for _, m := range h.history(w.Key.String()) {
				if m.Role == sessions.RoleUser {
					users = append(users, m.Text())
				}
			}
			all := strings.Join(users, "\n")
			for _, s := range texts {
				if !strings.Contains(all, s) {
					t.Errorf("%q never reached the model after the restart; transcript's user messages: %q", s, users)
				}
			}
			got := h.tg.texts()
			if len(got) == 0 || !strings.Contains(got[len(got)-1], "charlie-three") {
				t.Errorf("chat got %q, want the last reply to answer charlie-three", got)
			}
		})
	}
}
