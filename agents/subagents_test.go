package agents

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// queueDispatch records dispatches; drain runs them like the dispatcher.
func queueDispatch(*harness, Dispatch) error { return nil }

// drain runs every recorded dispatch from index from on, in order (new ones
// included), and returns the results by session key.
func (h *harness) drain(from int) map[string]Result {
	h.t.Helper()
	out := map[string]Result{}
	for i := from; i < len(h.dispatches()); i++ {
		d := h.dispatches()[i]
		if _, _, err := h.stores[d.AgentID].Begin(context.Background(), d.Key, sessions.Origin{At: time.Now()}); err != nil {
			h.t.Fatal(err)
		}
		res, err := h.r.Run(context.Background(), Turn{AgentID: d.AgentID, Key: d.Key, Inputs: []sessions.Message{d.Message}})
		if err != nil {
			h.t.Logf("run %s: %v", d.Key, err)
		}
		out[d.Key.String()] = res
	}
	return out
}

func spawnResult(t *testing.T, hist []sessions.Message) SpawnResult {
	t.Helper()
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult && m.ToolName == spawnToolName {
			var r SpawnResult
			if err := json.Unmarshal([]byte(m.Text()), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatal("no sessions_spawn result in the transcript")
	return SpawnResult{}
}

// scripted answers by session: parents spawn once, children answer.
func scripted(spawnArgs map[string]any) func(int, llm.Request) (sessions.Message, error) {
	return func(n int, req llm.Request) (sessions.Message, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case strings.Contains(req.System, "You are a subagent"):
			if strings.Contains(last.Text(), "try to spawn") {
				if last.Role == sessions.RoleUser {
					return assistantCall("child-call", spawnToolName, map[string]any{"task": "nested"}), nil
				}
				return assistantText("could not spawn: " + last.Text()), nil
			}
			return assistantText("child result for: " + last.Text()), nil
		case last.Role == sessions.RoleUser && strings.HasPrefix(last.Text(), "[subagent result]"):
			return assistantText("announced: " + last.Text()), nil
		case last.Role == sessions.RoleUser:
			return assistantCall("spawn-1", spawnToolName, spawnArgs), nil
		}
		return assistantText("started a helper"), nil
	}
}

func TestSpawnRunsChildAndAnnounces(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	// The model's label is made one line (an operator's PATCH must be).
	h.p.reply = scripted(map[string]any{"task": "count the files", "label": " the\n files ", "cleanup": "delete"})
	parent := h.key("main", "7")
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("please delegate")}})
	if err != nil || res.Text != "started a helper" {
		t.Fatalf("parent turn: %+v %v", res, err)
	}
	hist, _ := h.transcript("main", parent).History(context.Background())
	sr := spawnResult(t, hist)
	if sr.Status != SpawnAccepted || sr.RunID == "" {
		t.Fatalf("spawn result = %+v", sr)
	}
	child, err := routing.Parse(sr.ChildSessionKey)
	if err != nil || child.Agent != "main" || child.Subagent != sr.RunID {
		t.Fatalf("child key %q (%v)", sr.ChildSessionKey, err)
	}
	ds := h.dispatches()
	if len(ds) != 1 || ds[0].Key != child || !ds[0].Subagent || ds[0].Deliver || ds[0].Message.Text() != "count the files" {
		t.Fatalf("child dispatch = %+v", ds)
	}
	e, _, _ := h.stores["main"].Get(child)
	if e.SpawnedBy != parent.String() || e.Label != "the files" {
		t.Fatalf("child entry = %+v", e)
	}
	out := h.drain(0)
	if got := out[child.String()].Text; got != "child result for: count the files" {
		t.Fatalf("child answer = %q", got)
	}
	ds = h.dispatches()
	if len(ds) != 2 {
		t.Fatalf("%d dispatches, want the announcement", len(ds))
	}
	ann := ds[1]
	if ann.Key != parent || ann.Subagent || !ann.Deliver || ann.AgentID != "main" {
		t.Fatalf("announcement dispatch = %+v", ann)
	}
	for _, want := range []string{"status: done", "label: the files\n", sr.ChildSessionKey, "child result for: count the files"} {
		if !strings.Contains(ann.Message.Text(), want) {
			t.Fatalf("announcement %q lacks %q", ann.Message.Text(), want)
		}
	}
	if got := out[parent.String()].Text; !strings.HasPrefix(got, "announced: [subagent result]") {
		t.Fatalf("parent answer to the announcement = %q", got)
	}
	if _, ok, _ := h.stores["main"].Get(child); ok {
		t.Fatal("cleanup: delete left the child entry")
	}
	if len(h.stores["main"].archived) != 1 {
		t.Fatal("child transcript not archived")
	}
}

func TestSubagentCannotSpawn(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	h.p.reply = scripted(map[string]any{"task": "try to spawn"})
	parent := h.key("main", "7")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("go")}}); err != nil {
		t.Fatal(err)
	}
	h.drain(0)
	child, _ := routing.Parse(h.dispatches()[0].Key.String())
	hist, _ := h.transcript("main", child).History(context.Background())
	if sr := spawnResult(t, hist); sr.Status != SpawnForbidden || sr.ChildSessionKey != "" {
		t.Fatalf("nested spawn = %+v, want forbidden", sr)
	}
	for _, d := range h.dispatches() {
		if d.Subagent && d.Key != child {
			t.Fatalf("a nested child was dispatched: %+v", d)
		}
	}
	for _, r := range h.p.requests() {
		if strings.Contains(r.System, "You are a subagent") {
			for _, tl := range r.Tools {
				if tl.Name == spawnToolName {
					t.Fatal("sessions_spawn offered to a subagent")
				}
			}
		}
	}
}

func TestSpawnOtherAgentNeedsAllowAgents(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		want  string
	}{{nil, SpawnForbidden}, {[]string{"coder"}, SpawnAccepted}, {[]string{"*"}, SpawnAccepted}} {
		h := newHarness(t, Defaults{Subagents: Subagents{AllowAgents: tc.allow}}, []Agent{{ID: "main"}, {ID: "coder"}}, queueDispatch)
		h.p.reply = scripted(map[string]any{"task": "write code", "agentId": "coder"})
		parent := h.key("main", "7")
		if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("go")}}); err != nil {
			t.Fatal(err)
		}
		hist, _ := h.transcript("main", parent).History(context.Background())
		sr := spawnResult(t, hist)
		if sr.Status != tc.want {
			t.Fatalf("allow %v: status %q (%s)", tc.allow, sr.Status, sr.Error)
		}
		if sr.Status == SpawnAccepted {
			k, _ := routing.Parse(sr.ChildSessionKey)
			if k.Agent != "coder" {
				t.Fatalf("child key %s not on agent coder", k)
			}
			if _, ok, _ := h.stores["coder"].Get(k); !ok {
				t.Fatal("child entry not in the target agent's store")
			}
		}
	}
}

func TestSpawnArgumentErrors(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	parent := h.key("main", "7")
	s, err := h.r.open("main", parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{}`, `{"task":"x","agentId":"ghost"}`, `{"task":"x","cleanup":"shred"}`, `{"task":"x","thinking":"max"}`, `[1]`} {
		sr, err := h.r.spawn(context.Background(), s, json.RawMessage(args))
		if err != nil || sr.Status != SpawnError || sr.Error == "" {
			t.Errorf("%s: %+v %v", args, sr, err)
		}
	}
	if len(h.dispatches()) != 0 {
		t.Fatal("an invalid spawn was dispatched")
	}
}

func TestChildTimeoutIsAnnounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := slowChild(t, false)
		_, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message}})
		if err == nil {
			t.Fatal("a timed-out child reported success")
		}
		ds := h.dispatches()
		if len(ds) != 2 || !strings.Contains(ds[1].Message.Text(), "status: timed out") {
			t.Fatalf("announcement = %+v", ds)
		}
	})
}

type blockChildren struct{ *fakeProvider }

func (b blockChildren) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	if strings.Contains(req.System, "You are a subagent") {
		<-ctx.Done()
		return sessions.Message{}, ctx.Err()
	}
	return b.fakeProvider.Stream(ctx, req, fn)
}

// TestAnnouncementAfterRestart: the child's reply is in its transcript but
// the daemon stopped before announcing; the dispatcher re-runs the child's
// journaled record (already consumed, so no inputs) on a fresh Runner.
func TestAnnouncementAfterRestart(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	h.p.reply = scripted(map[string]any{"task": "remember me", "label": "mem"})
	parent := h.key("main", "7")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("go")}}); err != nil {
		t.Fatal(err)
	}
	d := h.dispatches()[0]
	// The child's reply got written, then the process died.
	tr := h.transcript("main", d.Key)
	tr.Append(context.Background(), d.Message, assistantText("the remembered result"))
	calls := len(h.p.requests())

	restarted, err := newRunner(h.r.opts)
	if err != nil {
		t.Fatal(err)
	}
	restarted.stores = h.r.stores
	if _, err := restarted.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Reuse: true}); err != nil {
		t.Fatal(err)
	}
	if len(h.p.requests()) != calls {
		t.Fatal("the model was called again for a finished child")
	}
	ds := h.dispatches()
	if len(ds) != 2 || ds[1].Key != parent || !strings.Contains(ds[1].Message.Text(), "the remembered result") ||
		!strings.Contains(ds[1].Message.Text(), "label: mem") {
		t.Fatalf("announcement after restart = %+v", ds)
	}
}

func TestSessionsListAndHistoryAreScoped(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	h.p.reply = scripted(map[string]any{"task": "child work", "label": "kid"})
	parent := h.key("main", "7")
	other := h.key("main", "8")
	ctx := context.Background()
	if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("go")}}); err != nil {
		t.Fatal(err)
	}
	h.drain(0)
	s, _ := h.r.open("main", parent)
	list, err := h.r.listTool().run(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(list)
	child := h.dispatches()[0].Key.String()
	if !strings.Contains(string(b), child) || !strings.Contains(string(b), parent.String()) || strings.Contains(string(b), other.String()) {
		t.Fatalf("sessions_list = %s", b)
	}
	hist, err := h.r.historyTool().run(ctx, s, json.RawMessage(`{"sessionKey":"`+child+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(hist)
	if !strings.Contains(string(b), "child result for: child work") {
		t.Fatalf("sessions_history = %s", b)
	}
	if _, err := h.r.historyTool().run(ctx, s, json.RawMessage(`{"sessionKey":"`+other.String()+`"}`)); err == nil {
		t.Fatal("another chat's history was readable")
	}
}
