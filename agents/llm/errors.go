package llm

import "strings"

// IsContextOverflowText reports whether a provider error message says the
// request exceeded the model's context window. Providers word it
// differently; these are the spellings of OpenAI, Anthropic, vLLM, Ollama
// and OpenRouter.
func IsContextOverflowText(s string) bool {
	s = strings.ToLower(s)
	for _, p := range []string{
		"context_length_exceeded",
		"maximum context length",
		"context window",
		"prompt is too long",
		"input is too long",
		"too many tokens",
		"exceeds the context",
	} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
