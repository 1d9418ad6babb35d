package agents

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/agents/webfetch"
	"github.com/gateway/gateway/sessions"
)

// TestOversizedToolResultsStillAnswered: within one turn the model fetches
// two large pages (web_fetch with maxChars 100000 each, ~30k tokens
// apiece) in a 40k window. Their results belong to the last turn, which
// neither pruning nor a compaction may leave out, so the request was
// larger than the model's window: the provider refused it, the overflow
// compaction had nothing to compact, and the member got "too long even
// after compacting" instead of an answer. The request now carries the
// results cut to fit (each marked as cut); the transcript keeps them whole.
func TestOversizedToolResultsStillAnswered(t *testing.T) {
	const window = 40000
	text := strings.Repeat("The tide turns at 16:40 today. ", 4000) // 124k chars
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(text))
	}))
	defer page.Close()
	srv, p := fakeOpenAI(t)
	args := func(u string) string {
		b, _ := json.Marshal(map[string]any{"url": u, "maxChars": 100000})
		return string(b)
	}
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		size := 0
		for _, m := range r.Body.Messages {
			size += len(m.Content)
		}
		if size/4 > window { // a real tokenizer: about 4 characters a token
			return openaitest.Reply{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "maximum context length is 40000 tokens"}
		}
		if r.Body.Messages[0].Content == summarySystemPrompt {
			return openaitest.Reply{Text: "a summary"}
		}
		last := r.Body.Messages[len(r.Body.Messages)-1]
		if last.Role == "user" {
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{
				{ID: "call_1", Name: "web_fetch", Arguments: args(page.URL + "/a")},
				{ID: "call_2", Name: "web_fetch", Arguments: args(page.URL + "/b")},
			}}
		}
		return openaitest.Reply{Text: "High tide is at 16:40."}
	})
	h := newHarnessWith(t, Defaults{ContextWindow: window}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}, Tools: Tools{Allow: []string{"web_fetch"}}}}, nil,
		map[string]llm.Provider{"oa": p})
	h.r.fetch = webfetch.New(webfetch.Options{Permit: func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.1") }})
	k := h.key("main", "1")
	ctx := context.Background()
	res, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("when is the tide? read both pages")}})
	if err != nil {
		t.Fatalf("turn failed: %v (%q)", err, UserMessage(err))
	}
	if res.Text != "High tide is at 16:40." {
		t.Fatalf("reply %q", res.Text)
	}
	reqs := srv.Requests()
	final := reqs[len(reqs)-1].Body.Messages
	var results int
	for _, m := range final {
		if m.Role == "tool" {
			results++
			if !strings.Contains(m.Content, "The tide turns") || !strings.Contains(m.Content, "context window") {
				t.Errorf("tool result sent: %.80q … %.200q, want its start and the cut marked", m.Content, m.Content[max(0, len(m.Content)-200):])
			}
		}
	}
	if results != 2 {
		t.Errorf("%d tool results in the final request, want both", results)
	}
	hist, _ := h.transcript("main", k).History(ctx)
	checkPaired(t, "transcript", hist[1:])
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult && len(m.Text()) < 100000 {
			t.Errorf("transcript's tool result holds %d chars, want it whole", len(m.Text()))
		}
	}
}

// TestCutToolResultBlocks: a cut keeps the first bytes of the text across
// its blocks, never splits a character, keeps images, and notes how much
// was left out even when the cut falls between two blocks.
func TestCutToolResultBlocks(t *testing.T) {
	img := sessions.Content{Type: sessions.BlockImage, Data: "AAAA", MimeType: "image/png"}
	m := sessions.Message{Role: sessions.RoleToolResult, ToolCallID: "c", Content: []sessions.Content{
		{Type: sessions.BlockText, Text: "ab"}, img, {Type: sessions.BlockText, Text: "潮汐"}, {Type: sessions.BlockText, Text: "xyz"}}}
	got := cutToolResult(m, 4) // "ab" and 2 of 潮's 3 bytes: 潮 goes whole
	if len(got.Content) != 3 || got.Content[0].Text != "ab" || got.Content[1].Type != sessions.BlockImage ||
		!strings.HasPrefix(got.Content[2].Text, "\n\n[… 9 more characters") {
		t.Fatalf("cut = %+v", got.Content)
	}
	got = cutToolResult(m, 2) // the cut falls right after the first block
	if got.Content[0].Text == "ab" || !strings.HasPrefix(got.Content[0].Text, "ab\n\n[… 9 more") {
		t.Fatalf("cut at a block's end = %+v", got.Content)
	}
	if m.Content[0].Text != "ab" || m.Content[2].Text != "潮汐" {
		t.Fatal("the message given was changed")
	}
	if c := cutCap([]int{50000, 10000, 3000}, 45000); c != 7500 {
		t.Fatalf("cap = %d, want 7500 (42500 + 2500 bytes removed)", c)
	}
}
