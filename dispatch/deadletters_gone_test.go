package dispatch

import (
	"errors"
	"sync"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// TestReplyToRemovedChatAskedOnceAndResubmittedOnce pins the outbox
// against a chat the bot was removed from: the refusal is not asked again
// (one attempt, no retries), the reply becomes one dead letter; resubmitted
// while the bot is still out, it is tried once more and kept again as one
// new letter - never a loop of retries or letters.
func TestReplyToRemovedChatAskedOnceAndResubmittedOnce(t *testing.T) {
	m := &model{reply: func(llm.Request) (string, error) { return "one§two", nil }}
	h := newHarness(t, "", m)
	var (
		mu       sync.Mutex
		attempts int
	)
	h.tg.failSend = func(out channels.Outbound, i int) error {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		return channels.Refusal(errors.New("telegram: sendMessage: 403 Forbidden: bot was kicked from the group chat"))
	}
	h.handle(in("tg", "56", "hello"))
	h.drained()
	ls := letters(t, h)
	if len(ls) != 1 || ls[0].Reply == nil || ls[0].Reply.Sent != 0 {
		t.Fatalf("letters %+v, want the reply, nothing sent", ls)
	}
	if _, err := h.d.Resubmit(h.ctx, ls[0].ID); err != nil {
		t.Fatal(err)
	}
	h.drained()
	eventually(t, "the resubmitted reply kept again", func() bool {
		l := letters(t, h)
		return len(l) == 1 && l[0].ID != ls[0].ID
	})
	mu.Lock()
	defer mu.Unlock()
	if attempts != 2 {
		t.Errorf("%d send attempts, want 2 (the reply, then its resubmit; a refusal is final)", attempts)
	}
	if l := letters(t, h); len(l) != 1 || l[0].Reply == nil || l[0].Reply.ID != sessions.ResubmitID(ls[0].ID) {
		t.Errorf("letters after the resubmit: %+v", l)
	}
}
