package channels

import "fmt"

// Kinds of Event.
const (
	EventReaction = "reaction" // a user reacted to one of the bot's messages
	EventEdit     = "edit"     // a user edited a message the bot had heard
	// EventMoved says the chat of the Inbound's address now has another
	// id (Event.ChatID): a Telegram group upgraded to a supergroup. It is
	// no message: the dispatcher moves the conversation's session to the
	// new chat's key. An adapter may deliver it more than once (both of
	// Telegram's service messages, a redelivery, a restart).
	EventMoved = "moved"
)

// What a room does with its reactions and edits (room keys reactions and
// edits). Both are off by default: an operator opts a room in.
const (
	// EventsOff: the event is dropped (the default).
	EventsOff = "off"
	// EventsNote: the event is kept for the session's next turn, as
	// context; it starts no turn.
	EventsNote = "note"
	// EventsTurn (reactions): the reaction is a message of its own and
	// starts a turn like one.
	EventsTurn = "turn"
	// EventsAnswer (edits): the edited text is answered again, as a new
	// message of the session.
	EventsAnswer = "answer"
)

// EventsConfig is a room's resolved reactions and edits modes.
type EventsConfig struct {
	Reactions string // EventsOff, EventsNote or EventsTurn
	Edits     string // EventsOff, EventsNote or EventsAnswer
}

// Mode is the room's mode for an event of kind ("" kinds: EventsOff).
func (c EventsConfig) Mode(kind string) string {
	m := ""
	switch kind {
	case EventReaction:
		m = c.Reactions
	case EventEdit:
		m = c.Edits
	}
	if m == "" {
		return EventsOff
	}
	return m
}

// Hears reports whether the room takes any event at all.
func (c EventsConfig) Hears() bool {
	return c.Mode(EventReaction) != EventsOff || c.Mode(EventEdit) != EventsOff
}

// Event is set on an Inbound that is not a new message: a reaction to one
// of the bot's messages, or an edit. The Inbound's sender is who reacted
// or edited; its MessageID is the message concerned, its Text (edits) the
// new text.
type Event struct {
	Kind string `json:"kind"`
	// Emoji is the reaction added (a custom emoji by its name or id).
	Emoji string `json:"emoji,omitempty"`
	// Stamp tells apart events on one message (the edit's date, the
	// reaction's emoji), so a redelivery is a duplicate and a second edit
	// is not.
	Stamp string `json:"stamp,omitempty"`
	// ChatID is the chat's new id (EventMoved).
	ChatID string `json:"chatId,omitempty"`
}

func (c RoomDefaults) validateEvents(path string) error {
	switch c.Reactions {
	case "", EventsOff, EventsNote, EventsTurn:
	default:
		return fmt.Errorf("%sreactions: %q is not off, note or turn", path, c.Reactions)
	}
	switch c.Edits {
	case "", EventsOff, EventsNote, EventsAnswer:
	default:
		return fmt.Errorf("%sedits: %q is not off, note or answer", path, c.Edits)
	}
	return nil
}

func (c RoomDefaults) applyEvents(r Room) Room {
	if c.Reactions != "" {
		r.Events.Reactions = c.Reactions
	}
	if c.Edits != "" {
		r.Events.Edits = c.Edits
	}
	return r
}
