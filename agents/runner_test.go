package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

func user(text string) sessions.Message { return sessions.UserText(text, time.Unix(1, 0)) }

func TestRunAppendsAndStreams(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main", SystemPrompt: "be kind"}}, nil)
	k := h.key("main", "42")
	var deltas []string
	appended := false
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("hello world")},
		OnInputsAppended: func() { appended = true }, OnDelta: func(s string) { deltas = append(deltas, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if !appended || res.Text != "ok: hello world" || strings.Join(deltas, "") != res.Text || len(deltas) < 2 {
		t.Fatalf("appended=%v res=%+v deltas=%q", appended, res, deltas)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	if len(hist) != 2 || hist[0].Text() != "hello world" || hist[1].Text() != res.Text {
		t.Fatalf("transcript = %+v", hist)
	}
	a := hist[1]
	if a.Provider != "fake" || a.Model != "model-1" || a.Usage == nil || a.Usage.Input == 0 || a.StopReason != llm.StopEnd || a.Timestamp == 0 {
		t.Fatalf("assistant metadata = %+v", a)
	}
	e, _, _ := h.stores["main"].Get(k)
	if e.MessageCount != 2 || e.InputTokens != a.Usage.Input || e.OutputTokens != a.Usage.Output || e.Model != "model-1" || e.ContextTokens == 0 {
		t.Fatalf("counters = %+v", e)
	}
	req := h.p.requests()[0]
	if req.System != "be kind" || req.Model != "model-1" || len(req.Messages) != 1 {
		t.Fatalf("request = %+v", req)
	}
	if res.TokenEstimate == 0 || res.SessionID != e.SessionID {
		t.Fatalf("result = %+v", res)
	}
}

func TestUsageReportedIsKept(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(int, llm.Request) (sessions.Message, error) {
		m := assistantText("hi")
		m.Usage = &sessions.Usage{Input: 1000, Output: 7}
		return m, nil
	}
	k := h.key("main", "1")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("x")}}); err != nil {
		t.Fatal(err)
	}
	e, _, _ := h.stores["main"].Get(k)
	if e.InputTokens != 1000 || e.OutputTokens != 7 || e.TotalTokens != 1007 || e.ContextTokens != 1007 {
		t.Fatalf("counters %+v: want the reported usage", e)
	}
}

func TestModelOverride(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main", Model: Model{Primary: "fake/agent-model"}}}, nil)
	h.r.prices = Prices{"fake/override": {}}
	k := h.key("main", "1")
	run := func() string {
		if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("x")}}); err != nil {
			t.Fatal(err)
		}
		reqs := h.p.requests()
		return reqs[len(reqs)-1].Model
	}
	if m := run(); m != "agent-model" {
		t.Fatalf("model = %q", m)
	}
	h.stores["main"].Patch(context.Background(), k, func(e *sessions.Entry) error { e.ModelOverride = "fake/override"; return nil })
	if m := run(); m != "override" {
		t.Fatalf("model = %q, want the override", m)
	}
	// An override the config no longer offers (taken out of its lists, or
	// its provider removed) runs the agent's model: never a model nobody
	// priced, never a turn that fails for a choice that is gone.
	for _, gone := range []string{"fake/unlisted", "nope/x"} {
		h.stores["main"].Patch(context.Background(), k, func(e *sessions.Entry) error { e.ModelOverride = gone; return nil })
		if m := run(); m != "agent-model" {
			t.Errorf("override %s: model = %q, want the agent's", gone, m)
		}
		if got := h.r.Model("main", sessions.Entry{ModelOverride: gone}); got != "fake/agent-model" {
			t.Errorf("Model with override %s = %q, want the agent's", gone, got)
		}
	}
}

func TestToolLoop(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			m := assistantCall("c1", "sessions_list", map[string]any{})
			m.Content = append(m.Content, assistantCall("c2", "no_such_tool", map[string]any{}).Content...)
			return m, nil
		}
		return assistantText("done listing"), nil
	}
	k := h.key("main", "1")
	var tools []string
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("list")},
		OnTool: func(name string, _ json.RawMessage) { tools = append(tools, name) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "done listing" || !cmp.Equal(tools, []string{"sessions_list", "no_such_tool"}) {
		t.Fatalf("res %+v tools %v", res, tools)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist[1:])
	if len(hist) != 5 || hist[2].IsError || !hist[3].IsError || !strings.Contains(hist[2].Text(), k.String()) {
		t.Fatalf("transcript = %+v", hist)
	}
	reqs := h.p.requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 4 {
		t.Fatalf("second request messages = %d", len(reqs[1].Messages))
	}
	var names []string
	for _, tl := range reqs[0].Tools {
		names = append(names, tl.Name)
	}
	if !cmp.Equal(names, []string{"sessions_list", "sessions_history"}) {
		t.Fatalf("tools offered without a dispatcher = %v", names)
	}
}

func TestToolLoopLimit(t *testing.T) {
	h := newHarness(t, Defaults{MaxToolIterations: 3}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		return assistantCall(fmt.Sprintf("c%d", n), "sessions_list", map[string]any{}), nil
	}
	k := h.key("main", "1")
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("loop")}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.p.requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	if !strings.Contains(res.Text, "Stopped after 3 tool steps") {
		t.Fatalf("text = %q", res.Text)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist[1:])
}

func TestContextWindowGuard(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "tiny", ContextWindow: 8000}, {ID: "small", ContextWindow: 20000}}, nil)
	_, err := h.r.Run(context.Background(), Turn{AgentID: "tiny", Key: h.key("tiny", "1"), Inputs: []sessions.Message{user("x")}})
	var ue *UserError
	if !errors.As(err, &ue) || !strings.Contains(ue.UserMessage(), "16000") {
		t.Fatalf("err = %v, want a user-safe refusal naming the minimum", err)
	}
	if len(h.p.requests()) != 0 {
		t.Fatal("the model was called despite the guard")
	}
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "small", Key: h.key("small", "1"), Inputs: []sessions.Message{user("x")}}); err != nil {
		t.Fatalf("a 20k window must run (with a warning): %v", err)
	}
}

func TestProviderErrorIsUserSafe(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(int, llm.Request) (sessions.Message, error) {
		return sessions.Message{}, errors.New("401 invalid api key sk-secret-123 for https://internal")
	}
	_, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "1"), Inputs: []sessions.Message{user("x")}})
	msg := UserMessage(err)
	if err == nil || strings.Contains(msg, "sk-secret") || strings.Contains(msg, "401") || msg == "" {
		t.Fatalf("user message %q for %v", msg, err)
	}
}

func TestSteerMessagesJoinTheNextCall(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			return assistantCall("c1", "sessions_list", map[string]any{}), nil
		}
		return assistantText("answered: " + lastUserText(req.Messages)), nil
	}
	steered := false
	steer := func() []sessions.Message {
		if len(h.p.requests()) == 1 && !steered {
			steered = true
			return []sessions.Message{user("also this")}
		}
		return nil
	}
	k := h.key("main", "1")
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("first")}, Steer: steer})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "answered: also this" {
		t.Fatalf("text = %q", res.Text)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist[1:4])
}

func TestResumedTurnReusesWrittenReply(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	k := h.key("main", "1")
	first, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Reuse: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != first.Text || len(h.p.requests()) != 1 {
		t.Fatalf("resumed turn: text %q, %d model calls", again.Text, len(h.p.requests()))
	}
	// A resumed turn whose reply is missing calls the model.
	h.transcript("main", k).Append(context.Background(), user("unanswered"))
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Reuse: true})
	if err != nil || res.Text != "ok: unanswered" {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestPruneHistory(t *testing.T) {
	big := strings.Repeat("x", 400) // ~124 tokens each
	var msgs []sessions.Message
	ids := []string{""}
	msgs = append(msgs, summaryMessage("old"))
	for i := 0; i < 10; i++ {
		msgs = append(msgs, user(big), assistantCall(fmt.Sprint("c", i), "t", map[string]any{"a": big}),
			sessions.Message{Role: sessions.RoleToolResult, ToolCallID: fmt.Sprint("c", i), Content: []sessions.Content{{Type: "text", Text: big}}},
			assistantText(big))
		ids = append(ids, "a", "b", "c", "d")
	}
	c := sessions.Context{Messages: msgs, EntryIDs: ids, Summary: "old"}
	total := llm.EstimateMessages(msgs)
	got := pruneHistory(c, total/2)
	if llm.EstimateMessages(got) > total/2 {
		t.Fatalf("pruned to %d tokens, budget %d", llm.EstimateMessages(got), total/2)
	}
	if got[0].Text() != msgs[0].Text() || got[1].Role != sessions.RoleUser {
		t.Fatalf("summary not pinned or first kept is not a user message: %+v", got[:2])
	}
	checkPaired(t, "pruned", got[1:])
	if !cmp.Equal(got[len(got)-4:], msgs[len(msgs)-4:]) {
		t.Fatal("last turn not kept")
	}
	// Nothing fits: the last turn is still sent.
	got = pruneHistory(c, 1)
	if len(got) != 5 {
		t.Fatalf("with no budget got %d messages, want summary + last turn", len(got))
	}
	if got := pruneHistory(c, total); len(got) != len(msgs) {
		t.Fatal("pruned a history that fits")
	}
}

func TestNewRunnerValidates(t *testing.T) {
	p := map[string]llm.Provider{"fake": &fakeProvider{name: "fake"}}
	for name, o := range map[string]Options{
		"no agents":      {Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m"}}},
		"bad id":         {Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m"}}, Agents: []Agent{{ID: "Bad Id"}}},
		"dup":            {Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m"}}, Agents: []Agent{{ID: "a"}, {ID: "a"}}},
		"unknown model":  {Providers: p, Defaults: Defaults{Model: Model{Primary: "other/m"}}, Agents: []Agent{{ID: "a"}}},
		"no slash":       {Providers: p, Defaults: Defaults{Model: Model{Primary: "fake"}}, Agents: []Agent{{ID: "a"}}},
		"allow unknown":  {Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m"}, Subagents: Subagents{AllowAgents: []string{"zz"}}}, Agents: []Agent{{ID: "a"}}},
		"share":          {Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m"}, MaxHistoryShare: 2}, Agents: []Agent{{ID: "a"}}},
		"reserve>window": {Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m"}, ContextWindow: 20000, Compaction: Compaction{ReserveTokens: 30000}}, Agents: []Agent{{ID: "a"}}},
	} {
		if _, err := newRunner(o); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if _, err := NewRunner(Options{Providers: p, Agents: []Agent{{ID: "a"}}}); err == nil {
		t.Error("NewRunner without Sessions: want an error")
	}
}

func TestTurnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Defaults{TimeoutSeconds: 30}, []Agent{{ID: "main"}}, nil)
		h.r.opts.Providers["fake"] = blockAll{}
		_, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "1"), Inputs: []sessions.Message{user("x")}})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(UserMessage(err), "longer than 30s") {
			t.Fatalf("err = %v (%q)", err, UserMessage(err))
		}
		// A cancelled caller is not a timeout.
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Second); cancel() }()
		_, err = h.r.Run(ctx, Turn{AgentID: "main", Key: h.key("main", "2"), Inputs: []sessions.Message{user("x")}})
		var ue *UserError
		if !errors.Is(err, context.Canceled) || errors.As(err, &ue) {
			t.Fatalf("cancelled turn: err = %v", err)
		}
	})
}

type blockAll struct{}

func (blockAll) Name() string { return "fake" }

func (blockAll) Stream(ctx context.Context, _ llm.Request, _ func(llm.Event)) (sessions.Message, error) {
	<-ctx.Done()
	return sessions.Message{}, ctx.Err()
}

// TestRequestMergesSameRoleTurns: two assistant messages in a row in the
// transcript (a reply, then an announcement) reach the provider as one
// assistant turn, their texts joined with a blank line (seed 004).
func TestRequestMergesSameRoleTurns(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	k := h.key("main", "77")
	reply := func(s string) sessions.Message {
		return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: s}}}
	}
	if _, err := h.transcript("main", k).Append(context.Background(), user("q"), reply("a1"), reply("a2")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("next")}}); err != nil {
		t.Fatal(err)
	}
	msgs := h.p.requests()[0].Messages
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+":"+m.Text())
	}
	if want := []string{"user:q", "assistant:a1\n\na2", "user:next"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("request messages %q, want %q", got, want)
	}
}
