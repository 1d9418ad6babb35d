package transcript

import (
	"slices"

	"github.com/gateway/gateway/sessions"
)

// RecordsLookback bounds how many entries Records walks back from the leaf.
// Recovery asks about the records of the last turns of a session, which sit
// at the end of its chain.
const RecordsLookback = 4096

// recordsOf walks back from leaf over nodes (at most RecordsLookback
// entries, stopping at one not in nodes) and reports what they hold of ids.
//
// The user messages that took ids fall into turns: a turn ends where a
// complete assistant reply or a user message of other records follows
// its last such message. The latest turn is described by the state's own
// fields, the ones before it by Earlier (a process that died after the
// reply of one turn was appended, and again in the next turn, leaves
// both turns' records pending: each is answered by its own reply).
func recordsOf(nodes map[string]*Node, leaf string, ids []string) sessions.RecordsState {
	rs := sessions.RecordsState{Consumed: map[string]bool{}}
	// Walk back from the leaf over the loaded nodes to the earliest
	// message that took one of ids.
	var walked []*Node
	earliest := -1
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
		walked = append(walked, n)
		hit := false
		for _, id := range n.Msg.RecordIDs {
			if slices.Contains(ids, id) {
				rs.Consumed[id], hit = true, true
			}
		}
		if hit {
			earliest = len(walked) - 1
			rs.HistorySeq = max(rs.HistorySeq, n.Msg.HistorySeq)
		}
	}
	if earliest < 0 {
		return rs
	}
	walked = walked[:earliest+1]
	slices.Reverse(walked)
	// Split the walk into turns: each holds the records its messages took
	// and the messages after the last of them.
	var (
		turns []recordsTurn
		t     *recordsTurn
	)
	for _, n := range walked {
		var hits []string
		for _, id := range n.Msg.RecordIDs {
			if slices.Contains(ids, id) {
				hits = append(hits, id)
			}
		}
		if len(hits) == 0 {
			t.after = append(t.after, n)
			continue
		}
		if t == nil || t.ended() {
			turns = append(turns, recordsTurn{})
			t = &turns[len(turns)-1]
		}
		t.ids, t.after = append(t.ids, hits...), nil
	}
	last := turns[len(turns)-1].outcome()
	rs.Answered, rs.Answer, rs.EntryID, rs.Refused, rs.Superseded = last.Answered, last.Answer, last.EntryID, last.Refused, last.Superseded
	for _, t := range turns[:len(turns)-1] {
		rs.Earlier = append(rs.Earlier, t.outcome())
	}
	return rs
}

// recordsTurn is one turn of recordsOf: the records its user messages
// took, and the messages that follow the last of them.
type recordsTurn struct {
	ids   []string
	after []*Node
}

// ended reports whether what follows the turn's records closes it: a
// complete reply, or a user message of other records.
func (t *recordsTurn) ended() bool {
	for _, n := range t.after {
		if m := n.Msg; (m.Role == sessions.RoleUser && len(m.RecordIDs) > 0) || (m.Role == sessions.RoleAssistant && !hasToolCall(*m)) {
			return true
		}
	}
	return false
}

// outcome is how the turn ended: answered by the last complete reply
// before the next user message of records, superseded by that message
// when no reply came first, or neither (it died mid-turn).
func (t *recordsTurn) outcome() sessions.RecordsTurn {
	o := sessions.RecordsTurn{IDs: t.ids}
	for _, n := range t.after {
		switch m := n.Msg; {
		case m.Role == sessions.RoleUser && len(m.RecordIDs) > 0:
			o.Superseded = !o.Answered
			return o
		case m.Role == sessions.RoleAssistant && !hasToolCall(*m):
			o.Answered, o.Answer, o.EntryID, o.Refused = true, m.Text(), n.ID, m.StopReason == sessions.StopRefusal
		case m.Role == sessions.RoleAssistant:
			o.Answered, o.Answer, o.EntryID, o.Refused = false, "", "", false // a tool step: the turn went on
		}
	}
	return o
}
