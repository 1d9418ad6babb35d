package llm

// Memo is what a provider keeps for one session between its model calls,
// to spare redoing, call after call, the work on what did not change (the
// openai provider: the messages as it last encoded them). The runner
// keeps one per session and passes it in each Request of the session's
// turns, one call at a time; it may drop it at any time. What a provider
// keeps must be keyed so that a message that changed can never reuse it.
type Memo struct {
	// Value is the provider's; a provider finding another's replaces it.
	Value any
	// Size is about how many bytes Value holds (the runner bounds the sum
	// over the sessions it keeps).
	Size int
}
