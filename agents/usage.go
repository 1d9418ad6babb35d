package agents

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// Prices are model prices keyed "provider/model", as models are written in
// agents.*.model. A model without an entry costs nothing.
type Prices map[string]llm.Price

// PricesFrom collects providers.<name>.models.<model>.price.
func PricesFrom(providers map[string]llm.ProviderConfig) Prices {
	out := Prices{}
	for name, p := range providers {
		for model, m := range p.Models {
			out[name+"/"+model] = m.Price
		}
	}
	return out
}

// Token kinds of gateway_tokens_total, named as pi's usage fields.
const (
	kindInput      = "input"
	kindOutput     = "output"
	kindCacheRead  = "cacheRead"
	kindCacheWrite = "cacheWrite"
)

// usageMetrics are the per-message token and cost counters.
type usageMetrics struct {
	tokens *prometheus.CounterVec // agent, model, kind
	cost   *prometheus.CounterVec // agent, model
	// compactions counts compaction entries written, by cause
	// (CompactionCauses).
	compactions *prometheus.CounterVec
}

// newUsageMetrics creates gateway_tokens_total and gateway_cost_usd_total
// and registers them with reg (nil: not registered).
func newUsageMetrics(reg prometheus.Registerer) (usageMetrics, error) {
	m := usageMetrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tokens_total",
			Help: "Tokens of assistant messages as the provider reported them (else estimated), by agent, provider/model and kind (input, output, cacheRead, cacheWrite).",
		}, []string{"agent", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_cost_usd_total",
			Help: "Cost in USD of assistant messages from the configured model prices (unpriced models add 0), by agent and provider/model.",
		}, []string{"agent", "model"}),
		compactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_compactions_total",
			Help: "Compactions written, by cause: manual (/compact), threshold (the context neared the window before a model call), overflow (the provider refused the context as too long).",
		}, []string{"cause"}),
	}
	for _, c := range CompactionCauses {
		m.compactions.WithLabelValues(c) // at zero from the start
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.tokens, m.cost, m.compactions} {
			if err := reg.Register(c); err != nil {
				return usageMetrics{}, fmt.Errorf("agents: register usage counters: %w", err)
			}
		}
	}
	return m, nil
}

// account prices an assistant message's usage (stored in usage.cost, as
// pi writes it) and counts its tokens and cost. It is a map lookup and a
// few multiplications; m.Usage must be set (stamp sets it).
func (r *Runner) account(agentID string, m *sessions.Message) {
	model := m.Provider + "/" + m.Model
	u := m.Usage
	u.Cost = r.prices[model].Cost(*u)
	for _, k := range [...]struct {
		kind string
		n    int64
	}{{kindInput, u.Input}, {kindOutput, u.Output}, {kindCacheRead, u.CacheRead}, {kindCacheWrite, u.CacheWrite}} {
		if k.n > 0 {
			r.usage.tokens.WithLabelValues(agentID, model, k.kind).Add(float64(k.n))
		}
	}
	r.usage.cost.WithLabelValues(agentID, model).Add(u.Cost.Total)
}

// addUsage adds u (tokens and cost) to sum.
func addUsage(sum *sessions.Usage, u sessions.Usage) {
	sum.Input += u.Input
	sum.Output += u.Output
	sum.CacheRead += u.CacheRead
	sum.CacheWrite += u.CacheWrite
	sum.TotalTokens += u.TotalTokens
	sum.Cost.Input += u.Cost.Input
	sum.Cost.Output += u.Cost.Output
	sum.Cost.CacheRead += u.Cost.CacheRead
	sum.Cost.CacheWrite += u.Cost.CacheWrite
	sum.Cost.Total += u.Cost.Total
}

// Total is the cost in USD of usage u of provider/model (0 when unpriced).
func (p Prices) Total(provider, model string, u sessions.Usage) float64 {
	return p[provider+"/"+model].Cost(u).Total
}
