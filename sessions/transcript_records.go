package sessions

import (
	"slices"
)

// recordsLookback bounds how many entries Records walks back from the leaf.
// Recovery asks about the records of the last turn of a session, which sit
// at the end of its chain.
const recordsLookback = 4096

// RecordsState is what a transcript holds of some journal records.
type RecordsState struct {
	// Consumed holds the ids whose user message is in the transcript.
	Consumed map[string]bool
	// Answered is true when a complete assistant reply follows the latest
	// of those user messages (the turn finished before the process died);
	// Answer is its text and EntryID its entry.
	Answered bool
	Answer   string
	EntryID  string
	// Superseded is true when a user message of other records follows them
	// without a reply to them in between: the session moved on.
	Superseded bool
	// HistorySeq is the highest room history sequence those user messages
	// took (0: none): the caller cuts the room's history after it.
	HistorySeq uint64
}

// recordsOf walks back from leaf over nodes (at most recordsLookback
// entries, stopping at one not in nodes) and reports what they hold of ids.
func recordsOf(nodes map[string]*Node, leaf string, ids []string) RecordsState {
	rs := RecordsState{Consumed: map[string]bool{}}
	// Walk back from the leaf over the loaded nodes; after is the part of
	// the chain that follows the latest matching user message.
	var after []*Node
	anchored := false
	cur := leaf
	for steps := 0; cur != "" && steps < recordsLookback && len(rs.Consumed) < len(ids); steps++ {
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
		case m.Role == RoleUser && len(m.RecordIDs) > 0:
			if !rs.Answered {
				rs.Superseded = true
			}
			return rs
		case m.Role == RoleAssistant && len(toolCallsOf(*m)) == 0:
			rs.Answered, rs.Answer, rs.EntryID = true, m.Text(), n.ID
		case m.Role == RoleAssistant:
			rs.Answered, rs.Answer, rs.EntryID = false, "", "" // a tool step: the turn went on
		}
	}
	return rs
}

func toolCallsOf(m Message) []Content {
	var out []Content
	for _, c := range m.Content {
		if c.Type == BlockToolCall {
			out = append(out, c)
		}
	}
	return out
}
