package transcript

import (
	"slices"

	"github.com/gateway/gateway/sessions"
)

// RecordsLookback bounds how many entries Records walks back from the leaf.
// Recovery asks about the records of the last turn of a session, which sit
// at the end of its chain.
const RecordsLookback = 4096

// recordsOf walks back from leaf over nodes (at most RecordsLookback
// entries, stopping at one not in nodes) and reports what they hold of ids.
func recordsOf(nodes map[string]*Node, leaf string, ids []string) sessions.RecordsState {
	rs := sessions.RecordsState{Consumed: map[string]bool{}}
	// Walk back from the leaf over the loaded nodes; after is the part of
	// the chain that follows the latest matching user message.
	var after []*Node
	anchored := false
	cur := leaf
	for steps := 0; cur != "" && steps < RecordsLookback && len(rs.Consumed) < len(ids); steps++ {
		n, ok := nodes[cur]
		if !ok {
			break
		}
		cur = n.Parent
		if n.Kind != KindMessage || n.Msg == nil {
			continue
		}
		hit := false
		for _, id := range n.Msg.RecordIDs {
			if slices.Contains(ids, id) {
				rs.Consumed[id], hit = true, true
			}
		}
		if hit {
			anchored = true
			rs.HistorySeq = max(rs.HistorySeq, n.Msg.HistorySeq)
		}
		if !anchored {
			after = append(after, n)
		}
	}
	if !anchored {
		return rs
	}
	slices.Reverse(after)
	for _, n := range after {
		m := n.Msg
		switch {
		case m.Role == sessions.RoleUser && len(m.RecordIDs) > 0:
			if !rs.Answered {
				rs.Superseded = true
			}
			return rs
		case m.Role == sessions.RoleAssistant && !hasToolCall(*m):
			rs.Answered, rs.Answer, rs.EntryID = true, m.Text(), n.ID
		case m.Role == sessions.RoleAssistant:
			rs.Answered, rs.Answer, rs.EntryID = false, "", "" // a tool step: the turn went on
		}
	}
	return rs
}
