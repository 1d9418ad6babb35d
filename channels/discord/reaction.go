package discord

import (
	"context"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
)

var _ channels.Reactor = (*Adapter)(nil)

// React implements channels.Reactor: it adds the bot's reaction to the
// message (PUT …/reactions/{emoji}/@me) or removes it (DELETE). The
// message lives in the thread when the target has one.
func (a *Adapter) React(ctx context.Context, r channels.Reaction) error {
	to, err := target(r.Target)
	if err != nil {
		return fmt.Errorf("discord: reaction: %w", err)
	}
	if r.MessageID == "" || r.Emoji == "" {
		return errors.New("discord: reaction: empty message id or emoji")
	}
	if r.Remove {
		err = a.s.MessageReactionRemove(to, r.MessageID, r.Emoji, "@me", discordgo.WithContext(ctx))
	} else {
		err = a.s.MessageReactionAdd(to, r.MessageID, r.Emoji, discordgo.WithContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("discord: reaction: %w", err)
	}
	return nil
}
