package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

var _ channels.Drafter = (*Adapter)(nil)

// RetryDelay is RetryAfter, for channels.RetryAfter.
func (e *APIError) RetryDelay() time.Duration { return e.RetryAfter }

// NotModified reports Telegram's answer to an edit that changes nothing.
func (e *APIError) NotModified() bool {
	return e.Code == 400 && strings.Contains(strings.ToLower(e.Description), "message is not modified")
}

// cutDraft fits md into one message: longer text keeps its first part
// (code blocks closed) and ends in "…".
func cutDraft(md string) string {
	md = strings.TrimSpace(md)
	if channels.UTF16Len(md) <= MaxMessageLength {
		return md
	}
	return channels.SplitMarkdown(md, MaxMessageLength-2)[0] + " …"
}

// SendDraft implements channels.Drafter with sendMessage (a reply to
// out.ReplyToID if set); a 429 is returned at once (channels.RetryAfter
// tells the wait).
func (a *Adapter) SendDraft(ctx context.Context, out channels.Outbound, text string) (string, error) {
	params, err := a.target(out)
	if err != nil {
		return "", err
	}
	quote(params, out, 0)
	resp, err := a.draftCall(ctx, "sendMessage", params, cutDraft(text))
	if err != nil {
		return "", err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(resp.Result, &m); err != nil || m.MessageID == 0 {
		return "", fmt.Errorf("telegram: sendMessage: no message id in the answer: %w", err)
	}
	id := strconv.Itoa(m.MessageID)
	a.noteSent(params, id, out.Address) // a reaction to the answer being written is one to the reply
	return id, nil
}

// EditDraft implements channels.Drafter with editMessageText. An edit that
// changes nothing is not an error; a 429 is returned at once.
func (a *Adapter) EditDraft(ctx context.Context, out channels.Outbound, id, text string) error {
	params, err := a.target(out)
	if err != nil {
		return err
	}
	delete(params, "message_thread_id")
	params["message_id"] = id
	_, err = a.draftCall(ctx, "editMessageText", params, cutDraft(text))
	var ae *APIError
	if errors.As(err, &ae) && ae.NotModified() {
		return nil
	}
	return err
}

// DeleteDraft implements channels.Drafter with deleteMessage.
func (a *Adapter) DeleteDraft(ctx context.Context, out channels.Outbound, id string) error {
	params, err := a.target(out)
	if err != nil {
		return err
	}
	delete(params, "message_thread_id")
	params["message_id"] = id
	_, err = a.call(ctx, "deleteMessage", params)
	return err
}

// draftCall sends md as HTML, once more as plain text if Telegram rejects
// the entities or finds no visible text (a half-streamed answer can end
// inside markup, or show only an opened code block).
func (a *Adapter) draftCall(ctx context.Context, method string, params tgbotapi.Params, md string) (*tgbotapi.APIResponse, error) {
	params["text"] = FormatHTML(md)
	params["parse_mode"] = "HTML"
	resp, err := a.call(ctx, method, params)
	var ae *APIError
	if errors.As(err, &ae) && ae.plainWouldPass() {
		delete(params, "parse_mode")
		params["text"] = md
		resp, err = a.call(ctx, method, params)
	}
	return resp, err
}

// replaceDraft edits out.Draft to chunk, the first chunk of a reply (429s
// waited out like a send). done is false when the draft cannot be edited
// (deleted by someone, too old): the caller sends the chunk as a new
// message instead.
func (a *Adapter) replaceDraft(ctx context.Context, out channels.Outbound, chunk string) (done bool, err error) {
	params, err := a.target(out)
	if err != nil {
		return true, err
	}
	delete(params, "message_thread_id")
	params["message_id"] = out.Draft
	err = a.sendChunkWith(ctx, "editMessageText", params, chunk)
	var ae *APIError
	switch {
	case err == nil, errors.As(err, &ae) && ae.NotModified():
		return true, nil
	case errors.As(err, &ae) && ae.Code == 400:
		a.log.Info("draft not editable; reply sent as a new message", zap.String("chat_id", out.ChatID),
			zap.String("reason", ae.Description))
		return false, nil
	}
	return true, err
}
