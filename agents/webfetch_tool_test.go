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

// TestWebFetchToolThroughTurn runs turns against the fake OpenAI server:
// the model calls web_fetch on a local page (reached through the test-only
// Permit), then on the metadata address, and reads both results.
func TestWebFetchToolThroughTurn(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://10.0.0.5/internal", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("The tide turns at 16:40 today."))
	}))
	defer page.Close()
	srv, p := fakeOpenAI(t)
	h := newHarnessWith(t, Defaults{}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}, Tools: Tools{Allow: []string{"web_fetch"}}}}, nil,
		map[string]llm.Provider{"oa": p})
	h.r.fetch = webfetch.New(webfetch.Options{Permit: func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.1") }})
	args := func(u string) string { b, _ := json.Marshal(map[string]string{"url": u}); return string(b) }
	srv.Script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "web_fetch", Arguments: args(page.URL + "/tide")}}},
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{
			{ID: "call_2", Name: "web_fetch", Arguments: args("http://169.254.169.254/latest/meta-data/")},
			{ID: "call_3", Name: "web_fetch", Arguments: args(page.URL + "/redirect")},
		}},
		openaitest.Reply{Text: "High tide is at 16:40."},
	)
	k := h.key("main", "1")
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("when is the tide?")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "High tide is at 16:40." {
		t.Fatalf("text = %q", res.Text)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var offered []string
	for _, tl := range reqs[0].Body.Tools {
		offered = append(offered, tl.Function.Name)
	}
	if strings.Join(offered, ",") != "sessions_list,sessions_history,web_fetch" {
		t.Fatalf("tools offered = %v", offered)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist)
	var results []sessions.Message
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult {
			results = append(results, m)
		}
	}
	if len(results) != 3 {
		t.Fatalf("%d tool results in %+v", len(results), hist)
	}
	want := []struct {
		isError bool
		text    string
	}{
		{false, "The tide turns at 16:40 today."},
		{true, "refused: 169.254.169.254 is a link-local address"},
		{true, "refused: 10.0.0.5 is a private address"},
	}
	for i, w := range want {
		r := results[i]
		if r.ToolName != "web_fetch" || r.IsError != w.isError || !strings.Contains(r.Text(), w.text) {
			t.Errorf("result %d = %+v, want isError %v with %q", i, r, w.isError, w.text)
		}
	}
	// The model saw the page text in its next request, as a tool message.
	var sawPage bool
	for _, m := range reqs[1].Body.Messages {
		if m.Role == "tool" && m.ToolCallID == "call_1" && strings.Contains(m.Content, "16:40 today") {
			sawPage = true
		}
	}
	if !sawPage {
		t.Fatalf("second request lacks the fetched text: %+v", reqs[1].Body.Messages)
	}
}

// TestWebFetchOffByDefault: an agent without tools.allow is not offered
// web_fetch, and a call to it anyway is an unknown tool.
func TestWebFetchOffByDefault(t *testing.T) {
	hit := make(chan struct{}, 1)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit <- struct{}{} }))
	defer page.Close()
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.r.fetch = webfetch.New(webfetch.Options{Permit: func(netip.Addr) bool { return true }})
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			for _, tl := range req.Tools {
				if tl.Name == "web_fetch" {
					t.Errorf("web_fetch offered without tools.allow")
				}
			}
			return assistantCall("c1", "web_fetch", map[string]string{"url": page.URL}), nil
		}
		return assistantText("ok"), nil
	}
	k := h.key("main", "1")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("fetch")}}); err != nil {
		t.Fatal(err)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	if len(hist) != 4 || !hist[2].IsError || !strings.Contains(hist[2].Text(), `unknown tool \"web_fetch\"`) {
		t.Fatalf("transcript = %+v", hist)
	}
	select {
	case <-hit:
		t.Fatal("the page was fetched")
	default:
	}
}

func TestToolsPolicy(t *testing.T) {
	tests := []struct {
		name  string
		tools Tools
		want  map[string]bool
		err   string
	}{
		{"default", Tools{}, map[string]bool{"web_fetch": false, "web_search": false, "sessions_list": true, "sessions_spawn": true}, ""},
		{"allow", Tools{Allow: []string{"web_fetch"}}, map[string]bool{"web_fetch": true, "sessions_history": true}, ""},
		{"deny wins", Tools{Allow: []string{"web_fetch"}, Deny: []string{"web_fetch", "sessions_history"}},
			map[string]bool{"web_fetch": false, "sessions_history": false, "sessions_list": true}, ""},
		{"unknown", Tools{Allow: []string{"web_browse"}}, nil, `tools.allow: unknown tool "web_browse"`},
		{"web_search opt-in", Tools{}, map[string]bool{"web_search": false}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Agent{ID: "main", Tools: tt.tools}.Validate()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.want {
				if got := tt.tools.offers(name); got != want {
					t.Errorf("offers(%s) = %v, want %v", name, got, want)
				}
			}
		})
	}
}
