package dispatch

import (
	"slices"
	"testing"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestResumedRefusalIsSaid: a turn whose model declined with no text
// (llm.StopRefusal) and whose process died after the refusal was appended
// but before the reply was stored says, after the restart, what the turn
// would have said (agents.RefusalText), not nothing, and runs no model.
func TestResumedRefusalIsSaid(t *testing.T) {
	h := newHarness(t, "", nil)
	w := acceptOnly(t, h, in("tg", "9", "q"))
	appendInput(t, h, w, sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopRefusal})
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{agents.RefusalText}) {
		t.Errorf("delivered after restart %q, want %q", got, agents.RefusalText)
	}
	if n := len(h.m.requests()); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
}
