package agents

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// testPrices are USD per million tokens.
var testPrices = Prices{
	"openai/gpt-4.1":              {Input: 2, Output: 8, CacheRead: 0.5},
	"anthropic/claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
}

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

func sameCost(a, b sessions.Cost) bool {
	return closeTo(a.Input, b.Input) && closeTo(a.Output, b.Output) && closeTo(a.CacheRead, b.CacheRead) &&
		closeTo(a.CacheWrite, b.CacheWrite) && closeTo(a.Total, b.Total)
}

func TestAccountCostsMatchHandComputedFigures(t *testing.T) {
	tests := []struct {
		name  string
		model string // provider/model
		usage sessions.Usage
		want  sessions.Cost
	}{
		{"input and output", "openai/gpt-4.1", sessions.Usage{Input: 1000, Output: 500},
			// 1000×2/1e6, 500×8/1e6
			sessions.Cost{Input: 0.002, Output: 0.004, Total: 0.006}},
		{"cache read and write", "anthropic/claude-sonnet-4-5",
			sessions.Usage{Input: 1000, Output: 500, CacheRead: 4000, CacheWrite: 2000},
			// 1000×3, 500×15, 4000×0.3, 2000×3.75 (per 1e6)
			sessions.Cost{Input: 0.003, Output: 0.0075, CacheRead: 0.0012, CacheWrite: 0.0075, Total: 0.0192}},
		{"a million output tokens", "openai/gpt-4.1", sessions.Usage{Output: 1_000_000},
			sessions.Cost{Output: 8, Total: 8}},
		{"model without a price", "local/echo", sessions.Usage{Input: 1000, Output: 500, CacheRead: 7},
			sessions.Cost{}},
		{"same model of another provider", "openrouter/gpt-4.1", sessions.Usage{Input: 1000},
			sessions.Cost{}},
		{"no tokens", "openai/gpt-4.1", sessions.Usage{}, sessions.Cost{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			r := &Runner{prices: testPrices}
			var err error
			if r.usage, err = newUsageMetrics(reg); err != nil {
				t.Fatal(err)
			}
			provider, model, _ := strings.Cut(tc.model, "/")
			u := tc.usage
			m := sessions.Message{Role: sessions.RoleAssistant, Provider: provider, Model: model, Usage: &u}
			r.account("main", &m)
			if !sameCost(m.Usage.Cost, tc.want) {
				t.Fatalf("usage.cost = %+v, want %+v", m.Usage.Cost, tc.want)
			}
			if got := testutil.ToFloat64(r.usage.cost.WithLabelValues("main", tc.model)); !closeTo(got, tc.want.Total) {
				t.Errorf("gateway_cost_usd_total = %v, want %v", got, tc.want.Total)
			}
			for kind, n := range map[string]int64{kindInput: u.Input, kindOutput: u.Output, kindCacheRead: u.CacheRead, kindCacheWrite: u.CacheWrite} {
				if got := testutil.ToFloat64(r.usage.tokens.WithLabelValues("main", tc.model, kind)); got != float64(n) {
					t.Errorf("gateway_tokens_total{kind=%s} = %v, want %d", kind, got, n)
				}
			}
		})
	}
}

func TestPricesFromProviderConfig(t *testing.T) {
	got := PricesFrom(map[string]llm.ProviderConfig{
		"openai": {Type: llm.TypeOpenAI, Models: map[string]llm.ModelConfig{"gpt-4.1": {Price: llm.Price{Input: 2, Output: 8}}}},
		"local":  {Type: llm.TypeEcho},
	})
	if len(got) != 1 || got["openai/gpt-4.1"] != (llm.Price{Input: 2, Output: 8}) {
		t.Fatalf("PricesFrom = %+v", got)
	}
}

// TestUsageCostStoredInTranscript runs a turn through the fake OpenAI
// model reporting cached tokens, on the files backend, and reads the cost
// back from the written line, the reloaded history and the counters.
func TestUsageCostStoredInTranscript(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetReply(func(_ int, r openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: "cheap answer", Usage: &goopenai.Usage{PromptTokens: 1200, CompletionTokens: 300,
			TotalTokens: 1500, PromptTokensDetails: &goopenai.PromptTokensDetails{CachedTokens: 1000}}}
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
	reg := prometheus.NewRegistry()
	r, err := NewRunner(Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"openai": p},
		Defaults: Defaults{Model: Model{Primary: "openai/gpt-4.1"}}, Agents: []Agent{{ID: "main"}},
		Registerer: reg, Prices: testPrices})
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
	e, _, err := st.Begin(context.Background(), key, sessions.Origin{Channel: "telegram", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), Turn{AgentID: "main", Key: key, Inputs: []sessions.Message{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	// 200 uncached input × 2, 300 output × 8, 1000 cache reads × 0.5 (per 1e6).
	want := sessions.Cost{Input: 0.0004, Output: 0.0024, CacheRead: 0.0005, Total: 0.0033}

	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tr.Path())
	if err != nil {
		t.Fatal(err)
	}
	// The last line is the assistant message, in pi's field names.
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var line struct {
		Message struct {
			Usage map[string]any `json:"usage"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
		t.Fatal(err)
	}
	u := line.Message.Usage
	cost, _ := u["cost"].(map[string]any)
	for field, want := range map[string]float64{"input": 200, "output": 300, "cacheRead": 1000, "cacheWrite": 0, "totalTokens": 1500} {
		if u[field] != want {
			t.Errorf("written usage.%s = %v, want %v", field, u[field], want)
		}
	}
	for field, want := range map[string]float64{"input": want.Input, "output": want.Output, "cacheRead": want.CacheRead,
		"cacheWrite": 0, "total": want.Total} {
		if got, ok := cost[field].(float64); !ok || !closeTo(got, want) {
			t.Errorf("written usage.cost.%s = %v, want %v", field, cost[field], want)
		}
	}
	hist, err := tr.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1]
	if last.Usage == nil || !sameCost(last.Usage.Cost, want) {
		t.Fatalf("history usage = %+v, want cost %+v", last.Usage, want)
	}
	if n, err := testutil.GatherAndCount(reg, "gateway_tokens_total", "gateway_cost_usd_total"); err != nil || n != 4 {
		t.Errorf("registered series = %d, %v; want 3 token kinds (no cacheWrite) and 1 cost", n, err)
	}
	for name, tc := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"cost":            {r.usage.cost.WithLabelValues("main", "openai/gpt-4.1"), 0.0033},
		"input tokens":    {r.usage.tokens.WithLabelValues("main", "openai/gpt-4.1", kindInput), 200},
		"output tokens":   {r.usage.tokens.WithLabelValues("main", "openai/gpt-4.1", kindOutput), 300},
		"cacheRead":       {r.usage.tokens.WithLabelValues("main", "openai/gpt-4.1", kindCacheRead), 1000},
		"cacheWrite none": {r.usage.tokens.WithLabelValues("main", "openai/gpt-4.1", kindCacheWrite), 0},
	} {
		if got := testutil.ToFloat64(tc.c); !closeTo(got, tc.want) {
			t.Errorf("%s: counter = %v, want %v", name, got, tc.want)
		}
	}
}

func BenchmarkAccount(b *testing.B) {
	r := &Runner{prices: testPrices}
	var err error
	if r.usage, err = newUsageMetrics(nil); err != nil {
		b.Fatal(err)
	}
	u := sessions.Usage{Input: 1000, Output: 500, CacheRead: 4000, CacheWrite: 2000}
	m := sessions.Message{Role: sessions.RoleAssistant, Provider: "anthropic", Model: "claude-sonnet-4-5", Usage: &u}
	b.ReportAllocs()
	for b.Loop() {
		r.account("main", &m)
	}
}
