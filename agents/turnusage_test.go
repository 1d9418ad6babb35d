package agents

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestResultUsageSumsTheTurn: a turn with a tool call makes two model
// calls; Result.Usage is their sum, tokens and cost (limits charges it).
func TestResultUsageSumsTheTurn(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		u := &goopenai.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100}
		if n == 0 {
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "sessions_list", Arguments: "{}"}}, Usage: u}
		}
		return openaitest.Reply{Text: "done", Usage: &goopenai.Usage{PromptTokens: 2000, CompletionTokens: 50, TotalTokens: 2050}}
	})
	p, err := openai.New(openai.Config{Name: "openai", Provider: srv.ProviderConfig()})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := filestore.Open(filestore.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	r, err := NewRunner(Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"openai": p},
		Defaults: Defaults{Model: Model{Primary: "openai/gpt-4.1"}}, Agents: []Agent{{ID: "main"}},
		Registerer: prometheus.NewRegistry(), Prices: testPrices})
	if err != nil {
		t.Fatal(err)
	}
	key, err := routing.PeerKey("main", "telegram", "", routing.Direct, "1")
	if err != nil {
		t.Fatal(err)
	}
	st, err := mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Begin(context.Background(), key, sessions.Origin{Channel: "telegram", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), Turn{AgentID: "main", Key: key, Inputs: []sessions.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	if u.Input != 3000 || u.Output != 150 || u.TotalTokens != 3150 {
		t.Errorf("Result.Usage tokens = %+v, want input 3000, output 150, total 3150", u)
	}
	// 3000 × 2 + 150 × 8 per 1e6.
	if !closeTo(u.Cost.Total, 0.0072) || !closeTo(u.Cost.Input, 0.006) || !closeTo(u.Cost.Output, 0.0012) {
		t.Errorf("Result.Usage.Cost = %+v, want input 0.006, output 0.0012, total 0.0072", u.Cost)
	}
}
