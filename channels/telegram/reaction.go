package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/gateway/gateway/channels"
)

var _ channels.Reactor = (*Adapter)(nil)

// reactionType is Telegram's ReactionTypeEmoji (tgbotapi v5 predates it).
type reactionType struct {
	Type  string `json:"type"`
	Emoji string `json:"emoji"`
}

// React implements channels.Reactor with setMessageReaction. A bot has at
// most one reaction per message: setting one replaces the previous, and
// removing sends an empty list. Telegram accepts only its own reaction
// emoji set (👀 is in it).
func (a *Adapter) React(ctx context.Context, r channels.Reaction) error {
	params, err := a.target(r.Target)
	if err != nil {
		return fmt.Errorf("telegram: setMessageReaction: %w", err)
	}
	delete(params, "message_thread_id") // the message id names it within the chat
	if r.MessageID == "" {
		return errors.New("telegram: setMessageReaction: empty message id")
	}
	if strings.HasPrefix(r.MessageID, migratedPrefix) || params["chat_id"] != r.Target.ChatID {
		// A message of a group that became a supergroup: the
		// supergroup's ids are its own (see quote).
		return channels.Refusal(errors.New("telegram: setMessageReaction: the message's group became a supergroup"))
	}
	params["message_id"] = r.MessageID
	list := []reactionType{}
	if !r.Remove {
		list = append(list, reactionType{Type: "emoji", Emoji: r.Emoji})
	}
	b, err := json.Marshal(list)
	if err != nil {
		return fmt.Errorf("telegram: setMessageReaction: %w", err)
	}
	params["reaction"] = string(b)
	return a.sendRetrying(ctx, "setMessageReaction", tgbotapi.Params(params))
}
