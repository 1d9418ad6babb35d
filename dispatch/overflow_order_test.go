package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestOverflowNoteStaysBeforeReset (SPEC §4 drop summarize, §3.6): the
// messages the cap dropped were sent before a /new queued after them, so
// their overflow note is answered in the session they were sent to, not
// injected into the fresh one the /new starts.
func TestOverflowNoteStaysBeforeReset(t *testing.T) {
	for _, mode := range []lanes.Mode{lanes.Followup, lanes.Collect} {
		t.Run(string(mode), func(t *testing.T) {
			m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
			h := newHarness(t, "", m, withQueue(QueueConfig{Mode: mode, Debounce: -1, Cap: 2, Drop: lanes.DropSummarize}))
			key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "101"}
			h.handle(in("tg", "101", "busy"))
			<-m.started
			for _, text := range []string{"m1", "m2", "/new", "m3"} { // m3 drops m1 and m2
				h.handle(in("tg", "101", text))
			}
			close(m.block)
			h.drained()
			var users []string
			for _, msg := range h.history(key.String()) {
				if msg.Role == sessions.RoleUser {
					users = append(users, firstLine(msg.Text(), 40))
				}
			}
			if len(users) != 1 || users[0] != "m3" {
				t.Errorf("the new session's user messages are %q, want [m3]: what was sent before /new stays out of it", users)
			}
			if !strings.Contains(strings.Join(h.tg.texts(), "\n"), "m1") {
				t.Errorf("no reply answered the dropped messages: %q", h.tg.texts())
			}
		})
	}
}
