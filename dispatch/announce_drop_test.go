package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestAnnouncementSurvivesTheQueue (SPEC §5: a subagent's result "is
// announced into the parent session (queued like any message if the
// parent is busy)", §4): an announcement queued behind the parent's
// running turn is internal work, no chat message: neither the queue's cap
// (drop summarize, old) nor a newer message in interrupt mode may drop
// it, since nothing of it would reach the model or the chat (a dropped
// internal work's record was finished unsaid).
func TestAnnouncementSurvivesTheQueue(t *testing.T) {
	for _, q := range []QueueConfig{
		{Mode: lanes.Followup, Cap: 1, Drop: lanes.DropSummarize},
		{Mode: lanes.Followup, Cap: 1, Drop: lanes.DropOld},
		{Mode: lanes.Interrupt, Cap: 20, Drop: lanes.DropSummarize},
	} {
		t.Run(string(q.Mode)+"-"+string(q.Drop), func(t *testing.T) {
			// The busy turn's model call outlives a cancellation (a provider
			// that answers late), so what queues behind it stays queued.
			release := make(chan struct{})
			m := &model{started: make(chan struct{}, 10)}
			m.reply = func(req llm.Request) (string, error) {
				if modelSawIn(req, "busy") && !modelSawIn(req, "the answer is 42") {
					<-release
				}
				return "ok", nil
			}
			h := newHarness(t, "", m, withQueue(q))
			key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "98"}
			h.handle(in("tg", "98", "busy"))
			<-m.started
			if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: key, Deliver: true,
				Message: sessions.UserText("[subagent result] the answer is 42", time.Now())}); err != nil {
				t.Fatal(err)
			}
			h.handle(in("tg", "98", "newer"))
			close(release)
			h.drained()
			if !modelSaw(m, "the answer is 42") {
				t.Errorf("the model never saw the announcement; it asked %d times", len(m.requests()))
			}
		})
	}
}

// modelSawIn reports whether a request held text.
func modelSawIn(req llm.Request, text string) bool {
	for _, msg := range req.Messages {
		if strings.Contains(msg.Text(), text) {
			return true
		}
	}
	return false
}
