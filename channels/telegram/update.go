package telegram

import (
	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// update is the part of a Bot API Update the adapter reads. tgbotapi v5.5.1
// has no forum-topic fields, so message and chat embed its types and add
// them; the outer fields shadow the embedded ones of the same JSON name.
type update struct {
	UpdateID          int      `json:"update_id"`
	Message           *message `json:"message,omitempty"`
	EditedMessage     *message `json:"edited_message,omitempty"`
	ChannelPost       *message `json:"channel_post,omitempty"`
	EditedChannelPost *message `json:"edited_channel_post,omitempty"`
	// MessageReaction is a user's change of their reactions (events.go).
	MessageReaction *messageReaction `json:"message_reaction,omitempty"`
	// CallbackQuery is a press of a choice button (choices.go).
	CallbackQuery *callbackQuery `json:"callback_query,omitempty"`
}

type message struct {
	tgbotapi.Message
	// Chat and ReplyToMessage shadow the embedded fields (which stay nil).
	Chat           *chat    `json:"chat"`
	ReplyToMessage *message `json:"reply_to_message,omitempty"`
	// MessageThreadID is the forum topic (or, outside forums, the reply
	// thread) the message belongs to.
	MessageThreadID int  `json:"message_thread_id,omitempty"`
	IsTopicMessage  bool `json:"is_topic_message,omitempty"`
}

type chat struct {
	tgbotapi.Chat
	IsForum bool `json:"is_forum,omitempty"`
}

// allowedUpdates is sent with getUpdates and setWebhook: messages, their
// edits and reactions (events.go; rooms hear the last two only where they
// opt in, so the dispatcher drops them elsewhere) and presses of choice
// buttons (choices.go).
const allowedUpdates = `["message","edited_message","message_reaction","callback_query"]`
