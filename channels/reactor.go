package channels

import "context"

// Reaction is an emoji reaction the bot puts on (or takes off) a message.
type Reaction struct {
	// Target is the chat (and thread or topic) of the message, as a reply
	// to it would be addressed.
	Target Outbound
	// MessageID is the platform id of the message reacted to.
	MessageID string
	// Emoji is the reaction, e.g. "👀".
	Emoji string
	// Remove takes the bot's reaction Emoji off instead.
	Remove bool
}

// Reactor is implemented by adapters that can react to a message (the
// room's ackReaction while a turn runs). Callers treat it as best-effort.
type Reactor interface {
	React(ctx context.Context, r Reaction) error
}
