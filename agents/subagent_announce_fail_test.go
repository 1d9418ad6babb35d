package agents

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestChildWhoseAnnouncementFailedIsKeptToRetry (SPEC §5, §3.7): a child
// (cleanup: delete) whose result could not be announced (the journal
// refused the announcement) returns the error so the dispatcher runs its
// turn again; the child must still be there, its reply reused, so the
// second run announces the result. Deleted at the first try, the retry
// ran the task again in a fresh session that knew no parent: the parent
// never heard.
func TestChildWhoseAnnouncementFailedIsKeptToRetry(t *testing.T) {
	var refused atomic.Bool
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, func(_ *harness, d Dispatch) error {
		if !d.Subagent && strings.HasPrefix(d.Message.Text(), "[subagent result]") && refused.CompareAndSwap(false, true) {
			return errors.New("journal: disk hiccup")
		}
		return nil
	})
	h.p.reply = scripted(map[string]any{"task": "count the files", "cleanup": "delete"})
	parent := h.key("main", "7")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("please delegate")}}); err != nil {
		t.Fatal(err)
	}
	d := h.dispatches()[0]
	st := h.stores["main"]
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message}}); err == nil {
		t.Fatal("a child whose announcement failed reported success: its record would be finished unannounced")
	}
	if _, ok, _ := st.Get(d.Key); !ok {
		t.Fatal("the child was deleted before its parent heard its result")
	}
	calls := len(h.p.requests())
	// The dispatcher runs the record again: the session is begun (as
	// every turn's) and the reply reused.
	if _, _, err := st.Begin(context.Background(), d.Key, sessions.Origin{At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Reuse: true}); err != nil {
		t.Fatal(err)
	}
	if len(h.p.requests()) != calls {
		t.Error("the child's task went to the model again")
	}
	ds := h.dispatches()
	last := ds[len(ds)-1]
	if last.Key != parent || !strings.Contains(last.Message.Text(), "child result for: count the files") {
		t.Fatalf("the retry announced %+v, want the child's result into the parent", last)
	}
	if _, ok, _ := st.Get(d.Key); ok {
		t.Error("cleanup: delete left the child once it had reported")
	}
}
