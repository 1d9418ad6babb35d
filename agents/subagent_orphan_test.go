package agents

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// TestChildOfRemovedAgentReportsFailure (SPEC §5: "when the child ends
// (done, failed, timed out) its result is announced into the parent"): a
// child whose agent was removed from the config before its run (a restart
// with the new config) cannot run; its parent hears that it failed rather
// than waiting for a result that never comes (the dispatcher finishes a
// child's record whose turn fails with a user error, unsaid).
func TestChildOfRemovedAgentReportsFailure(t *testing.T) {
	h := newHarness(t, Defaults{Subagents: Subagents{AllowAgents: []string{"coder"}}}, []Agent{{ID: "main"}, {ID: "coder"}}, queueDispatch)
	h.p.reply = scripted(map[string]any{"task": "write code", "agentId": "coder", "label": "codegen"})
	parent := h.key("main", "7")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("go")}}); err != nil {
		t.Fatal(err)
	}
	d := h.dispatches()[0]

	opts := h.r.opts
	opts.Agents = []Agent{{ID: "main"}} // coder is gone from the config
	opts.Defaults.Subagents.AllowAgents = nil
	restarted, err := newRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	restarted.stores, restarted.now = h.r.stores, h.r.now
	if _, err := restarted.Run(context.Background(), Turn{AgentID: d.AgentID, Key: d.Key, Inputs: []sessions.Message{d.Message}}); err == nil {
		t.Fatal("a child of a removed agent ran")
	}
	ds := h.dispatches()
	if len(ds) != 2 {
		t.Fatalf("dispatches %d, want the child and its failure's announcement", len(ds))
	}
	a := ds[1]
	if a.Key != parent || !strings.Contains(a.Message.Text(), "status: failed") || !strings.Contains(a.Message.Text(), "label: codegen") {
		t.Fatalf("announcement %+v", a)
	}
}
