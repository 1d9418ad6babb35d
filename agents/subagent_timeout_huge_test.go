package agents

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// TestHugeRunTimeoutDoesNotTimeOutAtOnce (SPEC §5): a model asking for a
// very long runTimeoutSeconds (meaning "no hurry") gets a child that
// runs: the seconds overflowed time.Duration to a negative timeout and
// the child was announced "timed out" before its first model call.
func TestHugeRunTimeoutDoesNotTimeOutAtOnce(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	h.p.reply = scripted(map[string]any{"task": "count the files", "runTimeoutSeconds": 9300000000})
	parent := h.key("main", "7")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("delegate")}}); err != nil {
		t.Fatal(err)
	}
	d := h.dispatches()[0]
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message}})
	if err != nil || res.Text != "child result for: count the files" {
		t.Fatalf("child run: %q, %v", res.Text, err)
	}
	if ds := h.dispatches(); len(ds) != 2 || !strings.Contains(ds[1].Message.Text(), "status: done") {
		t.Fatalf("announcement = %+v", ds)
	}
}
