package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

var _ channels.Drafter = (*Adapter)(nil)

// cutDraft fits text into one message: longer text keeps its first part
// (code blocks closed) and ends in "…".
func cutDraft(text string) string {
	text = strings.TrimSpace(text)
	if channels.UTF16Len(text) <= MaxMessageLen {
		return text
	}
	return channels.SplitMarkdown(text, MaxMessageLen-2)[0] + " …"
}

// SendDraft implements channels.Drafter: a post that pings no one (a reply
// to out.ReplyToID if set) whose id is returned. A rate limit is returned
// at once (ratelimit.go), as for EditDraft and DeleteDraft.
func (a *Adapter) SendDraft(ctx context.Context, out channels.Outbound, text string) (string, error) {
	to, err := target(out)
	if err != nil {
		return "", fmt.Errorf("discord: send draft: %w", err)
	}
	msg := &discordgo.MessageSend{Content: cutDraft(text), AllowedMentions: &discordgo.MessageAllowedMentions{}}
	if out.Quotes(0) {
		no := false
		msg.Reference = &discordgo.MessageReference{MessageID: out.ReplyToID, ChannelID: to, FailIfNotExists: &no}
	}
	var m *discordgo.Message
	nonce := freshNonce()
	err = a.rest(ctx, postRoute(to), false, func(opts ...discordgo.RequestOption) (err error) {
		m, err = a.postOnce(to, msg, nonce, opts...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("discord: send draft: %w", err)
	}
	return m.ID, nil
}

// EditDraft implements channels.Drafter with a message edit.
func (a *Adapter) EditDraft(ctx context.Context, out channels.Outbound, id, text string) error {
	to, err := target(out)
	if err != nil {
		return fmt.Errorf("discord: edit draft: %w", err)
	}
	err = a.rest(ctx, editRoute(to), false, func(opts ...discordgo.RequestOption) error {
		_, err := a.s.ChannelMessageEdit(to, id, cutDraft(text), opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("discord: edit draft: %w", err)
	}
	return nil
}

// DeleteDraft implements channels.Drafter.
func (a *Adapter) DeleteDraft(ctx context.Context, out channels.Outbound, id string) error {
	to, err := target(out)
	if err != nil {
		return fmt.Errorf("discord: delete draft: %w", err)
	}
	err = a.rest(ctx, editRoute(to), false, func(opts ...discordgo.RequestOption) error {
		return a.s.ChannelMessageDelete(to, id, opts...)
	})
	if err != nil {
		return fmt.Errorf("discord: delete draft: %w", err)
	}
	return nil
}

// replaceDraft edits out.Draft into part, a reply's first part. done is
// false when the draft is gone (deleted by someone): the caller posts the
// part instead.
func (a *Adapter) replaceDraft(ctx context.Context, out channels.Outbound, part string) (done bool, err error) {
	to, err := target(out)
	if err != nil {
		return true, fmt.Errorf("discord: send: %w", err)
	}
	edit := discordgo.NewMessageEdit(to, out.Draft).SetContent(part)
	edit.AllowedMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}}
	err = a.rest(ctx, editRoute(to), true, func(opts ...discordgo.RequestOption) error {
		_, err := a.s.ChannelMessageEditComplex(edit, opts...)
		return err
	})
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusNotFound {
		a.log.Info("draft gone; reply part posted as a new message", zap.String("chat_id", out.ChatID))
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("discord: edit draft into the reply: %w", answered(err))
	}
	return true, nil
}
