package discord

import (
	"context"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// userMentions lets a reply ping users but never roles or @everyone.
func userMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}}
}

// sendInteraction delivers part i of a reply to a slash command through
// its interaction: part 0 fills the original (deferred) response, later
// parts are followups (ephemeral for private commands). It acknowledges
// the interaction first if nothing has yet. handled is false when the
// token can no longer be used (expired, unknown): the caller then posts
// to the channel.
func (a *Adapter) sendInteraction(ctx context.Context, out channels.Outbound, i int, part string) (handled bool, err error) {
	ix := out.Interaction
	if !ix.Valid(time.Now()) {
		return false, nil
	}
	st := a.ix.state(ix.ID, ix.Expires, false)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.acked {
		if err := a.deferReply(ctx, ix); err != nil {
			return a.interactionFailed(ix, err)
		}
		st.acked = true
	}
	di := &discordgo.Interaction{ID: ix.ID, AppID: ix.AppID, Token: ix.Token}
	// Rate limits as for posts (ratelimit.go); the route is named by the
	// interaction's id, never its token (logs).
	err = a.rest(ctx, "interaction "+ix.ID, true, func(opts ...discordgo.RequestOption) (err error) {
		if i == 0 {
			_, err = a.s.InteractionResponseEdit(di, &discordgo.WebhookEdit{Content: &part, AllowedMentions: userMentions()}, opts...)
		} else {
			_, err = a.s.FollowupMessageCreate(di, true, &discordgo.WebhookParams{Content: part, Flags: ephemeral(ix.Private),
				AllowedMentions: userMentions()}, opts...)
		}
		return err
	})
	if err != nil {
		return a.interactionFailed(ix, fmt.Errorf("discord: interaction reply (part %d): %w", i+1, err))
	}
	if i == 0 {
		st.filled = true
	}
	return true, nil
}

// notifyInteraction answers a slash command with a notice only its caller
// sees (a refusal, a pairing code): as the interaction's response if it
// is not yet acknowledged, else as ephemeral followups.
func (a *Adapter) notifyInteraction(ctx context.Context, out channels.Outbound) (handled bool, err error) {
	ix := out.Interaction
	if !ix.Valid(time.Now()) {
		return false, nil
	}
	st := a.ix.state(ix.ID, ix.Expires, false)
	st.mu.Lock()
	defer st.mu.Unlock()
	di := &discordgo.Interaction{ID: ix.ID, AppID: ix.AppID, Token: ix.Token}
	for k, part := range a.Chunks(out) {
		if !st.acked {
			err = a.s.InteractionRespond(di, &discordgo.InteractionResponse{
				Type: discordgo.InteractionResponseChannelMessageWithSource,
				Data: &discordgo.InteractionResponseData{Content: part, Flags: discordgo.MessageFlagsEphemeral,
					AllowedMentions: userMentions()},
			}, discordgo.WithContext(ctx))
			if err == nil {
				st.acked = true
			}
		} else {
			_, err = a.s.FollowupMessageCreate(di, true, &discordgo.WebhookParams{Content: part,
				Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: userMentions()}, discordgo.WithContext(ctx))
		}
		if err != nil {
			if k > 0 {
				return true, fmt.Errorf("discord: interaction notice (part %d): %w", k+1, err)
			}
			return a.interactionFailed(ix, fmt.Errorf("discord: interaction notice: %w", err))
		}
	}
	return true, nil
}

// interactionFailed sorts a failed interaction call: a token Discord no
// longer accepts sends the reply to the channel (handled false); other
// errors are returned for the caller to retry.
func (a *Adapter) interactionFailed(ix *channels.Interaction, err error) (bool, error) {
	if tokenGone(err) {
		a.log.Info("interaction token no longer valid; replying in the channel",
			zap.String("interaction_id", ix.ID), zap.Error(err))
		return false, nil
	}
	return true, err
}
