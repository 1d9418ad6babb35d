package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

var _ channels.IDChunker = (*Adapter)(nil)

// MaxMessageLength is Telegram's limit for one message's text, in UTF-16
// code units after entity parsing.
const MaxMessageLength = 4096

// maxSendAttempts bounds retries of one message on 429 and migrations.
const maxSendAttempts = 4

// Send implements channels.Adapter: it converts out.Text (Markdown) to
// Telegram HTML, splits it into messages of at most 4096 characters and
// sends them in order to out's chat and topic, the first one as a reply to
// out.ReplyToID. A chunk whose entities Telegram rejects, or that renders
// to no visible text (an empty code block), is sent again as plain text.
// On error, chunks already sent stay sent.
func (a *Adapter) Send(ctx context.Context, out channels.Outbound) error {
	return a.deliver(ctx, out)
}

// Notify implements channels.Notifier (pairing codes, refusals); it
// delivers like Send.
func (a *Adapter) Notify(ctx context.Context, out channels.Outbound) error {
	return a.deliver(ctx, out)
}

// Typing implements channels.Typer with sendChatAction "typing" in out's
// chat and topic. Telegram shows it for about 5 s.
func (a *Adapter) Typing(ctx context.Context, out channels.Outbound) error {
	params, err := a.target(out)
	if err != nil {
		return err
	}
	params["action"] = "typing"
	_, err = a.call(ctx, "sendChatAction", params)
	return err
}

func (a *Adapter) deliver(ctx context.Context, out channels.Outbound) error {
	for i, chunk := range a.Chunks(out) {
		if err := a.SendChunk(ctx, out, i, chunk); err != nil {
			return err
		}
	}
	return nil
}

// Chunks implements channels.Chunker: out.Text split into messages of at
// most MaxMessageLength characters without breaking code blocks, then the
// calls that send out.Media (media_send.go).
func (a *Adapter) Chunks(out channels.Outbound) []string {
	if len(out.Media) > 0 {
		return a.chunksWithMedia(out)
	}
	return channels.SplitMarkdown(out.Text, MaxMessageLength)
}

// SendChunk implements channels.Chunker. A migration to a supergroup found
// while sending sticks for the following chunks (liveChatID).
func (a *Adapter) SendChunk(ctx context.Context, out channels.Outbound, i int, chunk string) error {
	_, err := a.SendChunkID(ctx, out, i, chunk)
	return err
}

// SendChunkID implements channels.IDChunker: SendChunk, returning the id
// of the message that shows the chunk (the draft's when chunk 0 replaced it).
func (a *Adapter) SendChunkID(ctx context.Context, out channels.Outbound, i int, chunk string) (string, error) {
	params, err := a.target(out)
	if err != nil {
		return "", err
	}
	if i == 0 && out.Draft != "" {
		if done, err := a.replaceDraft(ctx, out, chunk); done {
			if err == nil {
				a.noteSent(params, out.Draft, out.Address)
			}
			return out.Draft, err
		}
	}
	quote(params, out, i)
	resp, err := a.sendChunkResp(ctx, "sendMessage", params, chunk)
	if err != nil {
		return "", err
	}
	id := sentID(resp)
	a.noteSent(params, id, out.Address)
	return id, nil
}

// sentID is the message id in a sendMessage answer ("" if none).
func sentID(resp *tgbotapi.APIResponse) string {
	var m struct {
		MessageID int `json:"message_id"`
	}
	if resp == nil || json.Unmarshal(resp.Result, &m) != nil || m.MessageID == 0 {
		return ""
	}
	return strconv.Itoa(m.MessageID)
}

// target returns chat_id and message_thread_id for out. Topic 1 (General)
// is addressed without a thread id: Telegram rejects message_thread_id=1.
func (a *Adapter) target(out channels.Outbound) (tgbotapi.Params, error) {
	if out.ChatID == "" {
		return nil, errors.New("telegram: send: empty chat id")
	}
	chat := out.ChatID
	if id, err := strconv.ParseInt(chat, 10, 64); err == nil {
		chat = strconv.FormatInt(a.liveChatID(id), 10)
	}
	p := tgbotapi.Params{"chat_id": chat}
	if out.ThreadID != "" && out.ThreadID != generalTopic {
		if _, err := strconv.Atoi(out.ThreadID); err != nil {
			return nil, fmt.Errorf("telegram: send: thread id %q is not a number", out.ThreadID)
		}
		p["message_thread_id"] = out.ThreadID
	}
	return p, nil
}

// quote makes chunk i of out, to be sent with params, a reply to
// out.ReplyToID if out quotes it there. A supergroup numbers its messages
// afresh: a message id of the group it replaced (prefixed, or one of a
// reply to the group that params now send to the supergroup) would name
// another message there, or none, so such a reply quotes nothing.
func quote(params tgbotapi.Params, out channels.Outbound, i int) {
	if !out.Quotes(i) || strings.HasPrefix(out.ReplyToID, migratedPrefix) || params["chat_id"] != out.ChatID {
		return
	}
	params["reply_to_message_id"] = out.ReplyToID
	params["allow_sending_without_reply"] = "true"
}

// unquote drops a reply from params whose chat_id changed to a
// supergroup (see quote).
func unquote(params tgbotapi.Params) {
	delete(params, "reply_to_message_id")
	delete(params, "allow_sending_without_reply")
}

// sendChunk sends one chunk as HTML, falling back to plain text.
func (a *Adapter) sendChunk(ctx context.Context, params tgbotapi.Params, md string) error {
	return a.sendChunkWith(ctx, "sendMessage", params, md)
}

// sendChunkWith calls method (sendMessage or editMessageText) with md as
// HTML, falling back to plain text.
func (a *Adapter) sendChunkWith(ctx context.Context, method string, params tgbotapi.Params, md string) error {
	_, err := a.sendChunkResp(ctx, method, params, md)
	return err
}

// sendChunkResp is sendChunkWith, returning Telegram's answer.
func (a *Adapter) sendChunkResp(ctx context.Context, method string, params tgbotapi.Params, md string) (*tgbotapi.APIResponse, error) {
	params["text"] = FormatHTML(md)
	params["parse_mode"] = "HTML"
	resp, err := a.sendRetryingResp(ctx, method, params)
	var ae *APIError
	if errors.As(err, &ae) && ae.plainWouldPass() {
		a.log.Warn("telegram rejected formatted message, resending as plain text", zap.String("chat_id", params["chat_id"]),
			zap.String("reason", ae.Description))
		delete(params, "parse_mode")
		params["text"] = md
		resp, err = a.sendRetryingResp(ctx, method, params)
	}
	return resp, err
}

// sendRetrying calls method, waiting out 429 retry_after (up to
// Options.MaxRetryAfter) and following a group's migration to a supergroup.
func (a *Adapter) sendRetrying(ctx context.Context, method string, params tgbotapi.Params) error {
	_, err := a.sendRetryingResp(ctx, method, params)
	return err
}

// sendRetryingResp is sendRetrying, returning Telegram's answer.
func (a *Adapter) sendRetryingResp(ctx context.Context, method string, params tgbotapi.Params) (*tgbotapi.APIResponse, error) {
	return a.retrying(ctx, method, params, func() (*tgbotapi.APIResponse, error) {
		return a.call(ctx, method, params)
	}, nil)
}

// retrying makes call (one request of method to params' chat_id) until it
// succeeds or fails for good, at most maxSendAttempts times: a 429 whose
// retry_after is at most Options.MaxRetryAfter is waited out (unless ctx
// says the caller waits it out itself: channels.ReturnRateLimits), and a
// group's migration to a supergroup is recorded and, for a new message,
// followed (params' chat_id changed for the next call, a quote of the
// group's message dropped); a call about an existing message (message_id)
// fails then. fix, if not nil, sees each API
// error first and returns true when it changed what call sends so that
// it may succeed (a caption sent again as plain text). A transport error
// is returned at once: the caller (the outbox) retries it.
func (a *Adapter) retrying(ctx context.Context, method string, params tgbotapi.Params,
	call func() (*tgbotapi.APIResponse, error), fix func(*APIError) bool) (*tgbotapi.APIResponse, error) {
	var (
		resp *tgbotapi.APIResponse
		err  error
	)
	for attempt := 0; attempt < maxSendAttempts; attempt++ {
		resp, err = call()
		var ae *APIError
		if !errors.As(err, &ae) {
			return resp, err
		}
		switch {
		case fix != nil && fix(ae):
		case ae.RetryAfter > 0 && ae.RetryAfter <= a.opts.MaxRetryAfter && !channels.RateLimitsReturned(ctx):
			a.log.Warn("telegram rate limited, waiting", zap.String("method", method),
				zap.String("chat_id", params["chat_id"]), zap.Duration("retry_after", ae.RetryAfter))
			if !sleep(ctx, ae.RetryAfter) {
				return nil, fmt.Errorf("telegram: %s: %w", method, ctx.Err())
			}
		case ae.MigrateToChatID != 0:
			if old, err := strconv.ParseInt(params["chat_id"], 10, 64); err == nil {
				a.recordMigration(old, ae.MigrateToChatID)
			}
			if params["message_id"] != "" {
				// An edit of or a reaction to a message of the group: it
				// stays there, and its id names another message in the
				// supergroup (see quote).
				return resp, err
			}
			params["chat_id"] = strconv.FormatInt(ae.MigrateToChatID, 10)
			unquote(params)
		default:
			return resp, err
		}
	}
	return resp, err
}
