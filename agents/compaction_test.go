package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

func toolResult(id, text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleToolResult, ToolCallID: id, ToolName: "t", Content: []sessions.Content{{Type: "text", Text: text}}}
}

func TestPlanCompaction(t *testing.T) {
	big := strings.Repeat("y", 4000) // ~1200 tokens
	msgs := []sessions.Message{
		user("u1 " + big), assistantText("a1 " + big),
		user("u2 " + big), assistantCall("c1", "t", map[string]string{"q": big}), toolResult("c1", big), assistantText("a2"),
		user("u3"), assistantCall("c2", "t", nil), toolResult("c2", "r"), assistantText("a3"),
	}
	ids := []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10"}
	c := sessions.Context{Messages: msgs, EntryIDs: ids}
	// keepRecent 0: cut right at the last user message.
	p, ok := planCompaction(c, KeepRecent{})
	if !ok || p.firstKeptID != "e7" || len(p.summarize) != 6 {
		t.Fatalf("plan = %+v, %v", p, ok)
	}
	// keepRecent reaching into a tool call's result moves the cut forward
	// past the result, never between call and result.
	p, ok = planCompaction(c, KeepRecent{KeepRecentTokens: 1300})
	if !ok || msgs[p.firstKept].Role == sessions.RoleToolResult {
		t.Fatalf("cut at %d (%s)", p.firstKept, msgs[p.firstKept].Role)
	}
	if p.firstKeptID != "e6" {
		t.Fatalf("first kept = %s, want e6 (after the paired call/result)", p.firstKeptID)
	}
	// Everything recent: nothing to summarise.
	if _, ok := planCompaction(c, KeepRecent{KeepRecentTokens: 1 << 30}); ok {
		t.Fatal("planned a compaction that keeps everything")
	}
	// After a compaction the summary alone is never re-summarised.
	withSummary := sessions.Context{Messages: []sessions.Message{summaryMessage("s"), user("u")}, EntryIDs: []string{"", "e9"}, Summary: "s"}
	if _, ok := planCompaction(withSummary, KeepRecent{}); ok {
		t.Fatal("planned to summarise only the previous summary")
	}
}

func TestSummarizeStagedAndMerged(t *testing.T) {
	var prompts []string
	call := func(_ context.Context, prompt string) (string, error) {
		prompts = append(prompts, prompt)
		return fmt.Sprintf("S%d", len(prompts)), nil
	}
	var msgs []sessions.Message
	for i := 0; i < 40; i++ {
		msgs = append(msgs, user(fmt.Sprintf("m%d %s", i, strings.Repeat("z", 4000))))
	}
	// 40 × ~1200 tokens = 48k tokens; window 40k → chunk ≈ 16k - overhead.
	s, fb := summarize(context.Background(), call, msgs, 40000, "keep the numbers")
	if fb {
		t.Fatal("unexpected fallback")
	}
	if len(prompts) < 4 {
		t.Fatalf("%d calls, want several chunks plus a merge", len(prompts))
	}
	last := prompts[len(prompts)-1]
	if !strings.HasPrefix(last, "Merge these partial summaries") || !strings.Contains(last, "S1") || s != fmt.Sprintf("S%d", len(prompts)) {
		t.Fatalf("merge prompt / result wrong: %q → %q", last[:60], s)
	}
	for _, p := range prompts {
		if !strings.Contains(p, "Focus: keep the numbers") {
			t.Fatal("instructions missing from a prompt")
		}
		if n := llm.EstimateText(p); float64(n) > 40000*baseChunkRatio*safetyMargin {
			t.Fatalf("a prompt of %d tokens exceeds a chunk", n)
		}
	}
	if !strings.Contains(prompts[0], "m0 ") || strings.Contains(prompts[0], "m39 ") {
		t.Fatal("chunks not in order")
	}
}

func TestSummarizeFallbacks(t *testing.T) {
	huge := user("HUGE " + strings.Repeat("h", 80000)) // ~24k tokens: oversized for a 40k window
	msgs := []sessions.Message{user("small one"), huge, assistantText("small answer")}
	failHuge := func(_ context.Context, prompt string) (string, error) {
		if strings.Contains(prompt, "HUGE") {
			return "", errors.New("too long")
		}
		return "fine summary", nil
	}
	s, fb := summarize(context.Background(), failHuge, msgs, 40000, "")
	if !fb || !strings.HasPrefix(s, "fine summary") || !strings.Contains(s, "left out") {
		t.Fatalf("without-oversized fallback: %q fallback=%v", s, fb)
	}
	fail := func(context.Context, string) (string, error) { return "", errors.New("down") }
	s, fb = summarize(context.Background(), fail, msgs, 40000, "")
	if !fb || !strings.Contains(s, "Summary unavailable") || !strings.Contains(s, "3 earlier messages") {
		t.Fatalf("plain note: %q", s)
	}
	empty := func(context.Context, string) (string, error) { return "  ", nil }
	if s, fb = summarize(context.Background(), empty, msgs[:1], 40000, ""); !fb || !strings.Contains(s, "Summary unavailable") {
		t.Fatalf("empty summary accepted: %q", s)
	}
}

func TestCompactCommand(t *testing.T) {
	h := newHarness(t, Defaults{Compaction: Compaction{KeepRecentTokens: 1}}, []Agent{{ID: "main"}}, nil)
	k := h.key("main", "1")
	ctx := context.Background()
	if err := h.r.Compact(ctx, "main", k, ""); !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("empty session: err = %v", err)
	}
	for _, s := range []string{"one", "two", "three"} {
		if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(s)}}); err != nil {
			t.Fatal(err)
		}
	}
	var prompt string
	h.p.summary = func(req llm.Request) (string, error) {
		prompt = req.Messages[0].Text()
		return "they said one, two", nil
	}
	if err := h.r.Compact(ctx, "main", k, "mention numbers"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt, "Focus: mention numbers") || !strings.Contains(prompt, "User: one") || strings.Contains(prompt, "User: three") {
		t.Fatalf("summary prompt = %q", prompt)
	}
	tr := h.transcript("main", k)
	c, _ := tr.Context(ctx)
	if c.Summary != "they said one, two" || c.Messages[1].Text() != "three" {
		t.Fatalf("context after compaction: summary %q, first kept %q", c.Summary, c.Messages[1].Text())
	}
	e, _, _ := h.stores["main"].Get(k)
	if e.CompactionCount != 1 || e.ContextTokens == 0 {
		t.Fatalf("entry = %+v", e)
	}
	hist, _ := tr.History(ctx)
	if len(hist) != 6 {
		t.Fatalf("history lost messages: %d", len(hist))
	}
}

func TestSlowCompactionTimesOutToNote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Defaults{Compaction: Compaction{KeepRecentTokens: 1, TimeoutSeconds: 5}}, []Agent{{ID: "main"}}, nil)
		k := h.key("main", "1")
		ctx := context.Background()
		for _, s := range []string{"one", "two"} {
			if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(s)}}); err != nil {
				t.Fatal(err)
			}
		}
		h.r.opts.Providers["fake"] = slowSummary{h.p}
		if err := h.r.Compact(ctx, "main", k, ""); err != nil {
			t.Fatal(err)
		}
		c, _ := h.transcript("main", k).Context(ctx)
		if !strings.Contains(c.Summary, "Summary unavailable") {
			t.Fatalf("summary = %q, want the plain note", c.Summary)
		}
	})
}

// slowSummary never answers a summary request until its context ends.
type slowSummary struct{ *fakeProvider }

func (s slowSummary) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	if req.System == summarySystemPrompt {
		<-ctx.Done()
		return sessions.Message{}, ctx.Err()
	}
	return s.fakeProvider.Stream(ctx, req, fn)
}

func TestOverflowCompactsAndRetriesOnce(t *testing.T) {
	srv, p := fakeOpenAI(t)
	h := newHarnessWith(t, Defaults{Compaction: Compaction{KeepRecentTokens: 1}}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}}}, nil,
		map[string]llm.Provider{"oa": p})
	k := h.key("main", "1")
	ctx := context.Background()
	for _, s := range []string{"one", "two"} {
		if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(s)}}); err != nil {
			t.Fatal(err)
		}
	}
	overflow := openaitest.Reply{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "maximum context length is 8192 tokens"}
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		switch {
		case n == 2:
			return overflow
		case strings.HasPrefix(r.Body.Messages[0].Content, "You summarise"):
			return openaitest.Reply{Text: "the user counted one, two"}
		}
		return openaitest.DefaultReply(n, r)
	})
	res, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("three")}})
	if err != nil {
		t.Fatal(err)
	}
	// The fake answers "reply: " + the last user turn, which is the summary
	// and "three" merged into one (no two user turns in a row, seed 004).
	if !strings.HasPrefix(res.Text, "reply: ") || !strings.HasSuffix(res.Text, "</summary>\n\nthree") {
		t.Fatalf("text = %q", res.Text)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 { // 2 turns, overflow, summary, retry
		t.Fatalf("%d requests", len(reqs))
	}
	if !strings.Contains(reqs[4].Body.Messages[0].Content, "the user counted one, two") {
		t.Fatalf("retry does not start with the summary: %+v", reqs[4].Body.Messages[0])
	}
	e, _, _ := h.stores["main"].Get(k)
	if e.CompactionCount != 1 {
		t.Fatalf("compactionCount = %d", e.CompactionCount)
	}
	// A second overflow in a row is not retried again: one compaction, one retry.
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if strings.HasPrefix(r.Body.Messages[0].Content, "You summarise") {
			return openaitest.Reply{Text: "s"}
		}
		return overflow
	})
	_, err = h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("four")}})
	if err == nil || !strings.Contains(UserMessage(err), "/new") {
		t.Fatalf("err = %v (%q)", err, UserMessage(err))
	}
}

// TestLongConversation drives a session past the compaction threshold many
// times, with tool calls, and checks every request stays under the window.
func TestLongConversation(t *testing.T) {
	const window = 20000
	h := newHarness(t, Defaults{ContextWindow: window, Compaction: Compaction{ReserveTokens: 4000, KeepRecentTokens: 2000}, MaxHistoryShare: 1},
		[]Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n%3 == 1 && req.Messages[len(req.Messages)-1].Role == sessions.RoleUser {
			return assistantCall(fmt.Sprintf("call-%d", n), "sessions_list", map[string]any{"limit": 3}), nil
		}
		return assistantText(fmt.Sprintf("answer %d %s", n, strings.Repeat("a", 1200))), nil
	}
	k := h.key("main", "1")
	ctx := context.Background()
	written := 0
	for i := 0; i < 80; i++ {
		if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(fmt.Sprintf("question %d %s", i, strings.Repeat("q", 2000)))}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, req := range h.p.requests() {
		if n := llm.EstimateRequest(req); n >= window {
			t.Fatalf("request %d holds %d tokens, window %d", i, n, window)
		}
		msgs := req.Messages
		if msgs[0].Role == sessions.RoleUser && strings.Contains(msgs[0].Text(), "<summary>") {
			msgs = msgs[1:]
		}
		checkPaired(t, fmt.Sprintf("request %d", i), msgs)
	}
	tr := h.transcript("main", k)
	if tr.compactions() < 3 {
		t.Fatalf("%d compactions, want several", tr.compactions())
	}
	c, _ := tr.Context(ctx)
	if c.Summary == "" || !strings.Contains(c.Messages[0].Text(), c.Summary) {
		t.Fatal("summary missing from the context")
	}
	hist, _ := tr.History(ctx)
	for _, m := range hist {
		if m.Role == sessions.RoleUser {
			written++
		}
	}
	if written != 80 {
		t.Fatalf("transcript holds %d user messages, want all 80", written)
	}
	e, _, _ := h.stores["main"].Get(k)
	if e.CompactionCount != tr.compactions() || e.MessageCount != len(hist) {
		t.Fatalf("entry counters %+v vs %d compactions, %d messages", e, tr.compactions(), len(hist))
	}
}
