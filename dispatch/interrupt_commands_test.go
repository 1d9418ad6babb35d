package dispatch

import (
	"slices"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// TestInterruptCommandWaitsForTheRun (SPEC §4, §6.1): in interrupt mode a
// chat command sent while a turn runs (/status) is not the "newest
// message" that supersedes the turn: the turn is not cancelled (its
// message would get no answer at all, the command being no turn), and
// the command runs after it.
func TestInterruptCommandWaitsForTheRun(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Interrupt, Cap: 20, Drop: lanes.DropSummarize}))
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "81"}
	h.handle(in("tg", "81", "hello"))
	<-m.started
	h.handle(in("tg", "81", "/status"))
	eventually(t, "the command to queue", func() bool { return h.d.queue.Depth(key) == 1 })
	close(m.block)
	h.drained()
	texts := h.tg.texts()
	if !slices.Contains(texts, "re: hello") {
		t.Errorf("chat got %q: the turn the command interrupted was never answered", texts)
	}
	if len(texts) != 2 || !strings.Contains(texts[1], "main") {
		t.Errorf("chat got %q, want the turn's reply then the status", texts)
	}
}

// TestInterruptKeepsQueuedCommand (SPEC §4, §6.1): in interrupt mode a
// newer message supersedes older messages, never a chat command queued
// among them: "/reset" then "hello" sent while a turn runs reset the
// session, then "hello" runs in the new one.
func TestInterruptKeepsQueuedCommand(t *testing.T) {
	// The first turn's model call outlives its cancellation (a provider
	// that answers late), so what queues behind it stays queued.
	release := make(chan struct{})
	m := &model{started: make(chan struct{}, 10)}
	m.reply = func(req llm.Request) (string, error) {
		if texts := lastUserTexts(req.Messages); len(texts) == 1 && texts[0] == "first" {
			<-release
		}
		return "re: " + strings.Join(lastUserTexts(req.Messages), " + "), nil
	}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Interrupt, Cap: 20, Drop: lanes.DropSummarize}))
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "82"}
	h.handle(in("tg", "82", "first"))
	<-m.started
	h.handle(in("tg", "82", "/reset"))
	h.handle(in("tg", "82", "hello"))
	close(release)
	h.drained()
	hist := h.history(key.String())
	var users []string
	for _, msg := range hist {
		if msg.Role == "user" {
			users = append(users, msg.Text())
		}
	}
	if !slices.Equal(users, []string{"hello"}) {
		t.Errorf("the current session's user messages are %q, want [hello] (the /reset ran before it)", users)
	}
}
