package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/lanes"
)

// TestDroppedCommandIsTold (SPEC §4 cap, §3.7 "never dropped in
// silence"): a chat command the queue's cap pushes out has no summary line
// for the model (drop summarize) and no turn: its sender is told it was
// not run, instead of the command vanishing.
func TestDroppedCommandIsTold(t *testing.T) {
	for _, drop := range []lanes.Drop{lanes.DropOld, lanes.DropSummarize} {
		t.Run(string(drop), func(t *testing.T) {
			m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
			h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Followup, Cap: 1, Drop: drop}))
			h.handle(in("tg", "102", "busy"))
			<-m.started
			h.handle(in("tg", "102", "/status"))
			h.handle(in("tg", "102", "m1")) // pushes /status out
			close(m.block)
			h.drained()
			var told bool
			for _, s := range h.tg.sent() {
				told = told || (s.Out.Failed && strings.Contains(s.Text, "/status"))
			}
			if !told {
				t.Errorf("chat got %q: nothing said the /status was dropped", h.tg.texts())
			}
		})
	}
}
