package agents

import (
	"fmt"
	"slices"
)

// Ambient turns (issue 24): the dispatcher runs a batch of an ambient
// room's unaddressed messages as a turn with Turn.Ambient set. Such a
// turn is offered the message tool (unless the agent's policy denies it:
// tools.deny wins), since it is the only way the turn can speak; its
// final text is never delivered (the dispatcher's rule). Turn.Model, a
// room's ambientModel, replaces the session's model for the turn only;
// the agent's fallbacks still follow it, and when its window is smaller
// than the session's the turn's requests are pruned to it (sendWindow).

// AmbientTool reports whether an ambient turn of agentID can speak: the
// agent exists and its policy does not deny the message tool.
func (r *Runner) AmbientTool(agentID string) bool {
	a, ok := r.agents[agentID]
	return ok && !slices.Contains(a.Tools.Deny, MessageToolName)
}

// withAmbientTool adds the message tool to names for an ambient turn
// when the policy offers it not already and does not deny it.
func withAmbientTool(s *session, names []string) []string {
	if !s.ambient || slices.Contains(names, MessageToolName) || slices.Contains(s.agent.Tools.Deny, MessageToolName) {
		return names
	}
	return append(names, MessageToolName)
}

// useModel points s at model name for this turn (then the agent's
// fallbacks), leaving the session's entry as it is.
func (r *Runner) useModel(s *session, name string) error {
	chain := []string{name}
	for _, m := range r.modelChain(s.agent, s.entry)[1:] {
		if !slices.Contains(chain, m) {
			chain = append(chain, m)
		}
	}
	cands, err := r.candidates(chain, s.log)
	if err != nil {
		return userErr("The room's ambient model "+name+" is not configured.", fmt.Errorf("ambient model: %w", err))
	}
	s.cands, s.cur, s.provider, s.model = cands, 0, cands[0].provider, cands[0].model
	if w := r.windowOf(s.agent, name); w < s.window {
		s.turnWindow = w
	}
	return nil
}

// sendWindow is the window the turn's requests are pruned to: the
// session's, or the turn's own model's when that is smaller (a room's
// ambientModel). The compaction threshold stays the session's: the
// history is the session's, kept for its model; a smaller model reading
// it for one turn is sent less of it, not the session compacted for it.
func (s *session) sendWindow() int64 {
	if s.turnWindow > 0 {
		return s.turnWindow
	}
	return s.window
}
