package agents

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestReplyAheadWithTheFinalAnswerOnly (issue 21): Turn.ReplyAhead is
// asked once, before the final answer's append (not for an answer
// calling tools), with the result the turn then returns but its entry
// id; what it returns goes with that append, which takes the reply with
// the answer's entry id.
func TestReplyAheadWithTheFinalAnswerOnly(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, _ llm.Request) (sessions.Message, error) {
		if n == 0 {
			return assistantCall("c1", "no_such_tool", map[string]any{}), nil
		}
		m := assistantText("the answer")
		m.Usage = &sessions.Usage{Input: 30, Output: 5}
		return m, nil
	}
	var asked []Result
	var given []*sessions.ReplyAhead
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "7"), Inputs: []sessions.Message{user("q")},
		ReplyAhead: func(r Result) *sessions.ReplyAhead {
			asked = append(asked, r)
			ra := &sessions.ReplyAhead{Build: func(entryID string) (sessions.Reply, []sessions.UsageRow) {
				return sessions.Reply{ID: "rp", EntryID: entryID}, nil
			}}
			given = append(given, ra)
			return ra
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 {
		t.Fatalf("ReplyAhead asked %d times, want once (the final answer)", len(asked))
	}
	want := res
	want.EntryID = ""
	if d := cmp.Diff(want, asked[0]); d != "" {
		t.Errorf("ReplyAhead's result differs from the turn's (-returned +asked):\n%s", d)
	}
	if rp, ok := given[0].Taken(); !ok || rp.EntryID != res.EntryID || res.EntryID == "" {
		t.Errorf("taken = %+v, %v; want the reply of entry %q", rp, ok, res.EntryID)
	}
}

// TestReplyAheadNotForAChild: a subagent's turn ends with its
// announcement, which may fail after the answer was appended and have the
// dispatcher run the turn again (TestChildWhoseAnnouncementFailedIsKeptToRetry):
// its reply is never stored with the answer, where it would answer the
// child's record before the parent heard.
func TestReplyAheadNotForAChild(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, func(*harness, Dispatch) error { return nil })
	h.p.reply = scripted(map[string]any{"task": "count the files"})
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "7"),
		Inputs: []sessions.Message{user("please delegate")}}); err != nil {
		t.Fatal(err)
	}
	d := h.dispatches()[0]
	asked := 0
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message},
		ReplyAhead: func(Result) *sessions.ReplyAhead { asked++; return nil }}); err != nil {
		t.Fatal(err)
	}
	if asked != 0 {
		t.Errorf("ReplyAhead asked %d times for a child's turn, want never", asked)
	}
}
