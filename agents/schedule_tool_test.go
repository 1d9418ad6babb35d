package agents

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestScheduleTool: the model adds a job for the turn's chat and sender
// (in the agent's time zone), lists it, is refused a malformed schedule
// with what is wrong, and cancels it; another sender's job is neither
// listed nor cancellable.
func TestScheduleTool(t *testing.T) {
	store := filestore.NewJobs(t.TempDir(), 0)
	h := newHarness(t, Defaults{}, []Agent{{ID: "main", Tools: Tools{Allow: []string{ScheduleToolName}}}}, nil)
	h.r.opts.Jobs.Store = store
	target := &sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-100", ChatType: "group", SenderID: "7", SenderName: "Ann"}
	calls := []map[string]string{
		{"action": "add", "when": "tomorrow 09:00", "text": "remind the room of the stand-up"},
		{"action": "add", "when": "tomorrow 25:00", "text": "x"},
		{"action": "list"},
		{"action": "cancel", "id": "OTHER"},
		{"action": "cancel", "id": "JOB"},
	}
	other := sessions.Job{ID: "jother", AgentID: "main", SessionKey: "agent:main:telegram:group:-100",
		Target: sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-100", SenderID: "8"},
		Text:   "someone else's", Schedule: sessions.JobSchedule{Cron: "@daily"}, State: sessions.JobActive,
		NextAt: h.r.now().AddDate(0, 0, 1)}
	if err := store.AddJob(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n < len(calls) {
			args := calls[n]
			if args["id"] == "JOB" { // the job the first call added
				js, _ := store.ListJobs(context.Background(), sessions.JobFilter{})
				for _, j := range js {
					if j.Target.SenderID == "7" {
						args["id"] = j.ID
					}
				}
			}
			if args["id"] == "OTHER" {
				args["id"] = "jother"
			}
			return assistantCall("c", ScheduleToolName, args), nil
		}
		return assistantText("ok"), nil
	}
	k := h.key("main", "1")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("go")}, JobTarget: target}); err != nil {
		t.Fatal(err)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	var results []sessions.Message
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult {
			results = append(results, m)
		}
	}
	if len(results) != 5 {
		t.Fatalf("%d tool results, want 5", len(results))
	}
	js, err := store.ListJobs(context.Background(), sessions.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	add := results[0].Text()
	if results[0].IsError || !strings.Contains(add, `"next":"2026-01-03T09:00:00Z"`) {
		t.Errorf("add result %q", add)
	}
	if !results[1].IsError || !strings.Contains(results[1].Text(), "hour must be 0-23") {
		t.Errorf("malformed schedule result %q", results[1].Text())
	}
	if results[2].IsError || !strings.Contains(results[2].Text(), "remind the room of the stand-up") || strings.Contains(results[2].Text(), "someone else") {
		t.Errorf("list result %q", results[2].Text())
	}
	if !results[3].IsError || !strings.Contains(results[3].Text(), `no job \"jother\" set by this user`) {
		t.Errorf("cancel of another sender's job: %q", results[3].Text())
	}
	if results[4].IsError || len(js) != 1 || js[0].ID != "jother" {
		t.Errorf("after cancel (%q): jobs %v, want only jother", results[4].Text(), jobIDsOf(js))
	}
}

func jobIDsOf(js []sessions.Job) []string {
	var ids []string
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	return ids
}
