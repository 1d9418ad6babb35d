package llm

import "github.com/gateway/gateway/sessions"

// Thinker is implemented by providers that take a reasoning effort
// (Request.Thinking): OpenAI-compatible reasoning_effort, Anthropic's
// thinking budget. A provider without it has no such setting, and /think
// says so.
type Thinker interface {
	Thinks() bool
}

// Thinks reports whether p takes a reasoning effort.
func Thinks(p Provider) bool {
	t, ok := p.(Thinker)
	return ok && t.Thinks()
}

// Anthropic thinking budgets (budget_tokens) of the levels; off sends no
// thinking parameter.
const (
	ThinkingBudgetLow    = 2048
	ThinkingBudgetMedium = 8192
	ThinkingBudgetHigh   = 24576
)

// ThinkingBudget is level's Anthropic thinking budget, 0 for off or none.
func ThinkingBudget(level string) int64 {
	switch level {
	case sessions.ThinkingLow:
		return ThinkingBudgetLow
	case sessions.ThinkingMedium:
		return ThinkingBudgetMedium
	case sessions.ThinkingHigh:
		return ThinkingBudgetHigh
	}
	return 0
}

// ReasoningEffort is level as an OpenAI-compatible reasoning_effort, ""
// (not sent) for off or none.
func ReasoningEffort(level string) string {
	switch level {
	case sessions.ThinkingLow, sessions.ThinkingMedium, sessions.ThinkingHigh:
		return level
	}
	return ""
}
