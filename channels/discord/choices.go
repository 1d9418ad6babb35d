package discord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Choice buttons (channels/choices.go) on Discord: a question is a message
// with action rows of buttons whose custom_id is the signed data (at most
// 100 characters); a press is an INTERACTION_CREATE of type
// MESSAGE_COMPONENT carrying the message with its components. The press is
// checked against the label of the button with that custom_id on the
// message itself, handed to the Handler, and then answered within
// Discord's 3 seconds: accepted, with UPDATE_MESSAGE (type 7) that
// disables every button and marks the chosen one; refused by the access
// policy, with DEFERRED_UPDATE_MESSAGE (type 6), which changes nothing; a
// forged, expired or repeated press with a message only the presser sees.

// buttonsPerRow is Discord's limit of buttons in one action row.
const buttonsPerRow = 5

var _ channels.Asker = (*Adapter)(nil)

// Ask implements channels.Asker: text (cut to one message) with a row of
// buttons per five choices. Nobody is pinged. With out.DeliveryID the post
// carries its enforced nonce, as a reply's chunk does.
func (a *Adapter) Ask(ctx context.Context, out channels.Outbound, text string, choices []channels.Choice) (string, error) {
	to, err := target(out)
	if err != nil {
		return "", channels.Refusal(fmt.Errorf("discord: ask: %w", err)) // nothing posted
	}
	if r := []rune(text); len(r) > MaxMessageLen {
		text = string(r[:MaxMessageLen-2]) + " …"
	}
	msg := &discordgo.MessageSend{
		Content: text, Components: buttonRows(choices, ""),
		AllowedMentions: &discordgo.MessageAllowedMentions{},
	}
	var m *discordgo.Message
	nonce := postNonce(out, 0) // with a delivery, asked once (nonce.go): asking again shows the first question
	err = a.rest(ctx, postRoute(to), true, func(opts ...discordgo.RequestOption) (err error) {
		m, err = a.postOnce(to, msg, nonce, opts...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("discord: ask: %w", answered(err))
	}
	return m.ID, nil
}

// buttonRows lays choices out in rows of five; with chosen set (the data
// of the button pressed) every button is disabled and the chosen one is
// green.
func buttonRows(choices []channels.Choice, chosen string) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	var row discordgo.ActionsRow
	for _, c := range choices {
		b := discordgo.Button{Label: c.Label, CustomID: c.Data, Style: discordgo.PrimaryButton}
		if chosen != "" {
			b.Disabled, b.Style = true, discordgo.SecondaryButton
			if c.Data == chosen {
				b.Style = discordgo.SuccessButton
			}
		}
		row.Components = append(row.Components, b)
		if len(row.Components) == buttonsPerRow {
			rows, row = append(rows, row), discordgo.ActionsRow{}
		}
	}
	if len(row.Components) > 0 {
		rows = append(rows, row)
	}
	return rows
}

// messageButtons are the buttons of m, in order.
func messageButtons(m *discordgo.Message) []channels.Choice {
	if m == nil {
		return nil
	}
	var out []channels.Choice
	for _, c := range m.Components {
		row, ok := c.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, x := range row.Components {
			if b, ok := x.(*discordgo.Button); ok && b.CustomID != "" {
				out = append(out, channels.Choice{Label: b.Label, Data: b.CustomID})
			}
		}
	}
	return out
}

// press handles a button press (a MESSAGE_COMPONENT interaction).
func (a *Adapter) press(ctx context.Context, h channels.Handler, i *discordgo.Interaction) {
	log := a.log.With(zap.String("interaction_id", i.ID))
	data := i.MessageComponentData()
	user := i.User
	if i.Member != nil && i.Member.User != nil {
		user = i.Member.User
	}
	buttons := messageButtons(i.Message)
	label := ""
	for _, b := range buttons {
		if b.Data == data.CustomID {
			label = b.Label
		}
	}
	if user == nil || i.Message == nil || label == "" || a.opts.Choices == nil || !channels.IsChoiceData(data.CustomID) {
		log.Info("discord press dropped", zap.String("reason", "press_invalid"))
		a.respondNotice(ctx, i, channels.PressInvalidText)
		return
	}
	in := channels.Inbound{
		Address: channels.Address{Channel: Name, AccountID: a.id, ChatID: i.ChannelID}, MessageID: i.Message.ID,
		SenderID: user.ID, SenderName: user.Username, CaseSensitive: true, Mentioned: true, Press: true,
		Text: label, Time: time.Now(),
	}
	switch {
	case i.Member != nil && i.Member.Nick != "":
		in.SenderName = i.Member.Nick
	case user.GlobalName != "":
		in.SenderName = user.GlobalName
	}
	if i.GuildID == "" {
		in.ChatType = channels.Direct
	} else {
		in.ChatType, in.GuildID = channels.Channel, i.GuildID
		if !a.place(ctx, &in, i.ChannelID) {
			log.Warn("press not taken: its channel could not be looked up")
			a.respondNotice(ctx, i, "The gateway cannot take this right now; please try again shortly.")
			return
		}
	}
	if _, err := a.opts.Choices.Verify(in.Address, data.CustomID, label); err != nil {
		log.Info("discord press refused", zap.String("chat_id", in.ChatID), zap.String("sender_id", in.SenderID), zap.Error(err))
		a.respondNotice(ctx, i, channels.PressAnswer(err, nil))
		return
	}
	in.PressAsked, _ = channels.ChoiceIssued(data.CustomID)
	err := h(ctx, in)
	switch {
	case err == nil:
		a.respondPress(ctx, i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
			Data: &discordgo.InteractionResponseData{Components: buttonRows(buttons, data.CustomID)}})
	case errors.Is(err, channels.ErrDuplicate), errors.Is(err, channels.ErrChoiceExpired):
		a.respondNotice(ctx, i, channels.PressAnswer(nil, err))
	case errors.Is(err, channels.ErrRejected):
		// Refused by the access policy: acknowledged, nothing changes.
		a.respondPress(ctx, i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	case ctx.Err() != nil:
	default:
		log.Warn("press not accepted", zap.Error(err))
		a.respondNotice(ctx, i, "The gateway cannot take this right now; please try again shortly.")
	}
}

func (a *Adapter) respondPress(ctx context.Context, i *discordgo.Interaction, r *discordgo.InteractionResponse) {
	if err := a.s.InteractionRespond(i, r, discordgo.WithContext(ctx)); err != nil && ctx.Err() == nil {
		a.log.Warn("press not answered", zap.String("interaction_id", i.ID), zap.Error(err))
	}
}
