package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
)

var _ channels.IDChunker = (*Adapter)(nil)

// MaxMessageLen is Discord's limit on a message's content.
const MaxMessageLen = 2000

// target is the channel a reply goes to: the thread when there is one.
func target(out channels.Outbound) (string, error) {
	if out.ThreadID != "" {
		return out.ThreadID, nil
	}
	if out.ChatID == "" {
		return "", errors.New("no chat id")
	}
	return out.ChatID, nil
}

// Send posts out.Text, split at MaxMessageLen without breaking code blocks;
// the first part replies to out.ReplyToID. Replies may ping users but never
// roles or @everyone. It stops at the first failed part.
func (a *Adapter) Send(ctx context.Context, out channels.Outbound) error {
	if _, err := target(out); err != nil {
		return fmt.Errorf("discord: send: %w", err)
	}
	for i, part := range a.Chunks(out) {
		if err := a.SendChunk(ctx, out, i, part); err != nil {
			return err
		}
	}
	return nil
}

// Chunks implements channels.Chunker: out.Text split at MaxMessageLen
// without breaking code blocks; none for blank text.
func (a *Adapter) Chunks(out channels.Outbound) []string {
	if len(out.Media) > 0 {
		return a.chunksWithMedia(out) // media_send.go
	}
	return channels.SplitMarkdown(out.Text, MaxMessageLen)
}

// SendChunk implements channels.Chunker; chunk 0 replies to out.ReplyToID.
// The post carries a nonce Discord enforces (nonce.go): with
// out.DeliveryID, sending the same chunk again posts nothing new.
// A reply to a slash command goes through its interaction while the token
// is valid, else to the channel.
func (a *Adapter) SendChunk(ctx context.Context, out channels.Outbound, i int, part string) error {
	_, err := a.SendChunkID(ctx, out, i, part)
	return err
}

// SendChunkID implements channels.IDChunker: SendChunk, returning the id of
// the message that shows the part (the draft's when part 0 replaced it; ""
// for a part sent through an interaction).
func (a *Adapter) SendChunkID(ctx context.Context, out channels.Outbound, i int, part string) (string, error) {
	if out.Interaction != nil {
		if handled, err := a.sendInteraction(ctx, out, i, part); handled {
			return "", err
		}
		out.ReplyToID = "" // the interaction is not a message to reply to
	}
	to, err := target(out)
	if err != nil {
		return "", fmt.Errorf("discord: send: %w", err)
	}
	if i == 0 && out.Draft != "" {
		if done, err := a.replaceDraft(ctx, out, part); done {
			return out.Draft, err
		}
	}
	msg := &discordgo.MessageSend{
		Content: part,
		AllowedMentions: &discordgo.MessageAllowedMentions{
			Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers},
		},
	}
	if out.Quotes(i) { // replyToMode: first, all or off
		no := false
		msg.Reference = &discordgo.MessageReference{MessageID: out.ReplyToID, ChannelID: to, FailIfNotExists: &no}
	}
	var m *discordgo.Message
	nonce := postNonce(out, i)
	err = a.rest(ctx, postRoute(to), true, func(opts ...discordgo.RequestOption) (err error) {
		m, err = a.postOnce(to, msg, nonce, opts...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("discord: send message (part %d): %w", i+1, answered(err))
	}
	return m.ID, nil
}

// answered marks a REST error answer below 500 as the platform's refusal
// (channels.Answered; a 401, the bot's token refused, also
// channels.AccountRefused); anything else leaves the outcome unknown.
func answered(err error) error {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
		return channels.AccountRefusal(err) // the bot's token, not the channel
	}
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
		return channels.Refusal(err)
	}
	return err
}

// Notify sends a notice outside the agent flow (pairing codes, refusals).
func (a *Adapter) Notify(ctx context.Context, out channels.Outbound) error {
	if out.Interaction != nil {
		if handled, err := a.notifyInteraction(ctx, out); handled {
			return err
		}
		out.ReplyToID = ""
	}
	return a.Send(ctx, out)
}

// Typing shows the typing indicator once (Discord shows it for about 10 s
// or until the bot posts). A rate limit is returned at once.
func (a *Adapter) Typing(ctx context.Context, out channels.Outbound) error {
	to, err := target(out)
	if err != nil {
		return fmt.Errorf("discord: typing: %w", err)
	}
	err = a.rest(ctx, discordgo.EndpointChannelTyping(to), false, func(opts ...discordgo.RequestOption) error {
		return a.s.ChannelTyping(to, opts...)
	})
	if err != nil {
		return fmt.Errorf("discord: typing: %w", err)
	}
	return nil
}
