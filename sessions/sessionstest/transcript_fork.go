package sessionstest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// testFork is the fork case of TestTranscripts (sessions.ForkContext,
// thread.inheritParent: fork): the new transcript starts with the
// parent's active context (summary, tool calls and results included),
// without the parent's record ids or usage, and the two go their own ways
// after; a second fork into it is refused.
func testFork(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, parent := f.session("fork-parent")
	ids := f.appendTurns(parent, "m", 0, 4)
	f.compact(parent, "S1", ids[3])
	asked := userMsg(10, "look it up")
	asked.RecordIDs = []string{"rec-parent"}
	priced := replyMsg(13, "found it")
	priced.Usage = &sessions.Usage{Input: 100, Output: 10, TotalTokens: 110}
	f.append(parent, asked, callMsg(11, "c1"), resultMsg(12, "c1", "a.go holds 3 lines"), priced)
	want := f.context(parent)

	_, child := f.session("fork-child")
	n, head, err := sessions.ForkContext(f.ctx, parent, child)
	if err != nil {
		t.Fatalf("ForkContext: %v", err)
	}
	if n != len(want.Messages) || head != want.LeafID {
		t.Errorf("ForkContext = %d messages from head %q, want %d from %q", n, head, len(want.Messages), want.LeafID)
	}
	got := f.context(f.of(f.reopen(), mustGet(f, "fork-child")))
	f.wantTexts("the fork's context", got.Messages, texts(want.Messages)...)
	if diff := cmp.Diff(want.Messages[3].Content, got.Messages[3].Content); diff != "" {
		t.Errorf("the copied tool call differs (-parent +fork):\n%s", diff)
	}
	for i, m := range got.Messages {
		if m.Usage != nil && *m.Usage != (sessions.Usage{}) { // a backend may store an absent usage as zeros
			t.Errorf("copied message %d carries the parent's usage %+v", i, *m.Usage)
		}
	}
	if rs, err := child.Records(f.ctx, []string{"rec-parent"}); err != nil || len(rs.Consumed) != 0 {
		t.Errorf("the fork holds the parent's record: %+v, %v", rs.Consumed, err)
	}

	// Each goes its own way.
	f.append(child, userMsg(20, "in the thread"))
	f.append(parent, userMsg(21, "in the channel"))
	if pc := f.context(parent); len(pc.Messages) != len(want.Messages)+1 || pc.Messages[len(pc.Messages)-1].Text() != "in the channel" {
		t.Errorf("the parent after the fork:\n%v", texts(pc.Messages))
	}
	if cc := f.context(child); cc.Messages[len(cc.Messages)-1].Text() != "in the thread" {
		t.Errorf("the fork after its own append:\n%v", texts(cc.Messages))
	}
	if _, _, err := sessions.ForkContext(f.ctx, parent, child); err == nil {
		t.Error("a second fork into a transcript with messages was accepted")
	}

	// An empty parent copies nothing.
	_, empty := f.session("fork-empty-parent")
	_, fresh := f.session("fork-fresh")
	if n, _, err := sessions.ForkContext(f.ctx, empty, fresh); n != 0 || err != nil {
		t.Errorf("fork of an empty parent = %d, %v", n, err)
	}
}

// mustGet is the entry of peer's group session.
func mustGet(f *tfix, peer string) sessions.Entry {
	f.t.Helper()
	for _, e := range mustList(f) {
		if e.SessionKey == "agent:"+f.st.AgentID()+":telegram:group:"+peer {
			return e
		}
	}
	f.t.Fatalf("no session for %s", peer)
	return sessions.Entry{}
}

func mustList(f *tfix) []sessions.Entry {
	f.t.Helper()
	es, err := f.st.List()
	if err != nil {
		f.t.Fatalf("List: %v", err)
	}
	return es
}
