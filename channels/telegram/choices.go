package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Choice buttons (channels/choices.go) on Telegram: a question is a
// sendMessage with an inline keyboard whose callback_data is the signed
// data (at most 64 bytes, which the signed form keeps under); a press is a
// callback_query update. The press is checked against the label the
// message's own reply_markup shows for that data, handed to the Handler
// with the batch wait bypassed (so it is durable before anything else),
// and then the keyboard is removed (editMessageReplyMarkup without
// reply_markup) and the query answered (answerCallbackQuery, within
// Telegram's 15 s or the client shows an error). A press the access policy
// refuses is answered with nothing and leaves the keyboard for those who
// may press; a forged, expired or repeated press gets a short notice. A
// press on a message too old for Telegram to show (date 0, no keyboard)
// is expired: its label, which the signature covers, cannot be read. A
// press on a question asked in a group before its upgrade to a supergroup
// is reported under the supergroup and verified against the group's id it
// was signed for (verifyPress).

// Drop reasons of presses (logged at info: they are rare and tell of a
// modified client or a stale keyboard).
const (
	dropPressNoMessage = "press_without_message"
	dropPressInvalid   = "press_invalid"
	dropPressExpired   = "press_expired"
)

// callbackQuery is Bot API CallbackQuery (the fields the adapter reads).
type callbackQuery struct {
	ID              string         `json:"id"`
	From            *tgbotapi.User `json:"from"`
	Message         *message       `json:"message,omitempty"`
	InlineMessageID string         `json:"inline_message_id,omitempty"`
	Data            string         `json:"data,omitempty"`
}

var _ channels.Asker = (*Adapter)(nil)

// Ask implements channels.Asker: text (cut to one message) with one
// button per choice, on one row when they are few and short.
func (a *Adapter) Ask(ctx context.Context, out channels.Outbound, text string, choices []channels.Choice) (string, error) {
	params, err := a.target(out)
	if err != nil {
		return "", err
	}
	markup, err := json.Marshal(tgbotapi.NewInlineKeyboardMarkup(keyboardRows(choices)...))
	if err != nil {
		return "", fmt.Errorf("telegram: ask: %w", err)
	}
	params["reply_markup"] = string(markup)
	resp, err := a.draftCall(ctx, "sendMessage", params, cutDraft(text))
	if err != nil {
		return "", err
	}
	id := sentID(resp)
	if id == "" {
		return "", errors.New("telegram: sendMessage: no message id in the answer")
	}
	a.noteSent(params, id, out.Address)
	return id, nil
}

// keyboardRows lays choices out: one row for up to three short labels,
// else one button a row.
func keyboardRows(choices []channels.Choice) [][]tgbotapi.InlineKeyboardButton {
	short := len(choices) <= 3
	for _, c := range choices {
		short = short && len([]rune(c.Label)) <= 16
	}
	var rows [][]tgbotapi.InlineKeyboardButton
	var row []tgbotapi.InlineKeyboardButton
	for _, c := range choices {
		b := tgbotapi.NewInlineKeyboardButtonData(c.Label, c.Data)
		if short {
			row = append(row, b)
			continue
		}
		rows = append(rows, tgbotapi.NewInlineKeyboardRow(b))
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

// press handles a callback_query. It returns nil when the update may be
// acknowledged (the press was handled, refused or dropped) and the
// Handler's error when it could not accept the press (the update comes
// again).
func (a *Adapter) press(ctx context.Context, h channels.Handler, q *callbackQuery) error {
	self := a.self.Load()
	if self == nil {
		return errors.New("telegram: not connected")
	}
	log := a.log.With(zap.String("callback_query_id", q.ID))
	m := q.Message
	if m == nil || m.Chat == nil || q.From == nil || a.opts.Choices == nil || !channels.IsChoiceData(q.Data) {
		// An inline-mode message, a message too old to be sent with the
		// query, or a button not of ours: nothing to continue.
		log.Info("telegram press dropped", zap.String("reason", dropPressNoMessage))
		a.answerPress(ctx, q.ID, channels.PressInvalidText)
		return nil
	}
	if m.Date == 0 {
		// An InaccessibleMessage: too old for Telegram to show the bot
		// its keyboard, so the label the data was signed with cannot be
		// read and the press cannot be verified. The question can no
		// longer be answered: say so, and close its keyboard.
		log.Info("telegram press dropped", zap.String("reason", dropPressExpired))
		a.closeKeyboard(ctx, m, log)
		a.answerPress(ctx, q.ID, channels.PressExpiredText)
		return nil
	}
	in, ok := a.pressInbound(m, q)
	if !ok {
		text := channels.PressInvalidText
		if m.ReplyMarkup == nil || len(m.ReplyMarkup.InlineKeyboard) == 0 {
			text = channels.PressAnsweredText // a client still showing a closed keyboard
		}
		log.Info("telegram press dropped", zap.String("reason", dropPressInvalid))
		a.answerPress(ctx, q.ID, text)
		return nil
	}
	if err := a.verifyPress(in.Address, q.Data, in.Text); err != nil {
		reason := dropPressInvalid
		if errors.Is(err, channels.ErrChoiceExpired) {
			reason = dropPressExpired
		}
		log.Info("telegram press refused", zap.String("reason", reason), zap.String("chat_id", in.ChatID),
			zap.String("sender_id", in.SenderID))
		a.answerPress(ctx, q.ID, channels.PressAnswer(err, nil))
		return nil
	}
	in.PressAsked, _ = channels.ChoiceIssued(q.Data)
	err := h(channels.WithoutBatch(ctx), in)
	switch {
	case err == nil, errors.Is(err, channels.ErrDuplicate), errors.Is(err, channels.ErrChoiceExpired):
		// Accepted now or before (a second press, a keyboard left open by
		// a crash), or a question of a session since reset: close it, and
		// tell a late presser.
		a.closeKeyboard(ctx, m, log)
		a.answerPress(ctx, q.ID, channels.PressAnswer(nil, err))
		return nil
	case errors.Is(err, channels.ErrRejected):
		a.answerPress(ctx, q.ID, "") // refused by the policy: nothing happens
		return nil
	}
	return err
}

// verifyPress checks a press's data against the chat it is reported
// under (at, the live chat) and, failing that, against each group that was
// upgraded to it: a question asked before the upgrade was signed for the
// group's id (the signature binds the chat, so only the chats that became
// this one can lend it theirs).
func (a *Adapter) verifyPress(at channels.Address, data, label string) error {
	_, err := a.opts.Choices.Verify(at, data, label)
	if err == nil || errors.Is(err, channels.ErrChoiceExpired) {
		return err
	}
	live, perr := strconv.ParseInt(at.ChatID, 10, 64)
	if perr != nil {
		return err
	}
	for _, old := range a.migratedInto(live) {
		before := at
		before.ChatID = strconv.FormatInt(old, 10)
		if _, verr := a.opts.Choices.Verify(before, data, label); verr == nil || errors.Is(verr, channels.ErrChoiceExpired) {
			return verr
		}
	}
	return err
}

// pressInbound is the press as a message of the pressed message's chat
// (and topic) from the presser, its text the pressed button's label as
// the message shows it; false if the data names no button of the message.
func (a *Adapter) pressInbound(m *message, q *callbackQuery) (channels.Inbound, bool) {
	label := ""
	if m.ReplyMarkup != nil {
		for _, row := range m.ReplyMarkup.InlineKeyboard {
			for _, b := range row {
				if b.CallbackData != nil && *b.CallbackData == q.Data {
					label = b.Text
				}
			}
		}
	}
	if label == "" {
		return channels.Inbound{}, false
	}
	in := channels.Inbound{
		Address:   channels.Address{Channel: Name, AccountID: a.account, ChatID: strconv.FormatInt(m.Chat.ID, 10)},
		MessageID: strconv.Itoa(m.MessageID), CaseSensitive: true, Mentioned: true, Press: true,
		SenderID: strconv.FormatInt(q.From.ID, 10), SenderName: displayName(q.From),
		Text: label, Time: time.Now().UTC(),
	}
	switch m.Chat.Type {
	case "private":
		in.ChatType = channels.Direct
		if m.MessageThreadID != 0 {
			in.ThreadID = strconv.Itoa(m.MessageThreadID)
		}
	case "group", "supergroup":
		in.ChatType = channels.Group
		if live := a.liveChatID(m.Chat.ID); live != m.Chat.ID {
			// A press in a group already upgraded: the supergroup's
			// conversation (inbound.go), the message id the old chat's.
			in.ChatID = strconv.FormatInt(live, 10)
			in.MessageID = migratedPrefix + in.MessageID
		}
		if m.IsTopicMessage || m.Chat.IsForum {
			in.IsTopic, in.ThreadID = true, generalTopic
			if m.IsTopicMessage && m.MessageThreadID != 0 {
				in.ThreadID = strconv.Itoa(m.MessageThreadID)
			}
		}
	default:
		return channels.Inbound{}, false
	}
	return in, true
}

// closeKeyboard removes the pressed message's keyboard; a keyboard
// already gone ("message is not modified") is fine.
func (a *Adapter) closeKeyboard(ctx context.Context, m *message, log *zap.Logger) {
	_, err := a.call(ctx, "editMessageReplyMarkup", tgbotapi.Params{
		"chat_id": strconv.FormatInt(m.Chat.ID, 10), "message_id": strconv.Itoa(m.MessageID)})
	var ae *APIError
	if err != nil && !(errors.As(err, &ae) && ae.NotModified()) && ctx.Err() == nil {
		log.Warn("telegram keyboard not closed", zap.Error(err))
	}
}

// answerPress answers the query (text "" stops the client's spinner and
// shows nothing). Failing is only logged: the query expires by itself.
func (a *Adapter) answerPress(ctx context.Context, id, text string) {
	p := tgbotapi.Params{"callback_query_id": id}
	if text != "" {
		p["text"] = text
	}
	if _, err := a.call(ctx, "answerCallbackQuery", p); err != nil && ctx.Err() == nil {
		a.log.Info("telegram callback query not answered", zap.String("callback_query_id", id), zap.Error(err))
	}
}
