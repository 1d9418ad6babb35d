package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// An operator's message into a session (issue 27: `gateway sessions send`,
// POST /api/agents/{id}/sessions/{key}/messages). It goes where the
// session last replied (its entry's last channel, account, chat and
// thread), on the session's lane so it never lands inside a turn's reply.
// It is an outbound message like a reply: appended to the transcript as an
// assistant message marked provider "operator" (the agent sees later what
// was said in its name), then stored in the outbox and sent, so a restart
// resends what the platform has not accepted. It starts no agent turn: the
// source documents do not say it should, and an operator who wants an
// answer writes in the chat.

// OperatorProvider marks a transcript message an operator sent.
const OperatorProvider = "operator"

// MaxOperatorText bounds an operator message (it is split for the
// platform like any reply).
const MaxOperatorText = 20000

// Errors of SendToSession that callers branch on.
var (
	// ErrNoChat: the session has never replied anywhere, or no adapter
	// serves its last channel and account now.
	ErrNoChat = errors.New("the session has no chat to send to")
	// ErrBadText: the text is empty, too long or not UTF-8.
	ErrBadText = errors.New("bad message text")
	// ErrNotSent: the outbox refused the message (another replica holds
	// the session's lease); nothing was sent.
	ErrNotSent = errors.New("the outbox did not take the message")
)

// SentMessage is what SendToSession reports.
type SentMessage struct {
	SessionID string `json:"sessionId"`
	EntryID   string `json:"entryId"`
	Channel   string `json:"channel"`
	AccountID string `json:"accountId,omitempty"`
	ChatID    string `json:"chatId"`
	ThreadID  string `json:"threadId,omitempty"`
}

// SendToSession sends text from the operator into the current session of
// key (of agent agentID). sessions.ErrNotFound: the key has no session.
func (d *Dispatcher) SendToSession(ctx context.Context, agentID string, key routing.Key, text string) (SentMessage, error) {
	if err := checkOperatorText(text); err != nil {
		return SentMessage{}, fmt.Errorf("dispatch: send to %s: %w", key, err)
	}
	store, err := d.opts.Sessions.Store(agentID)
	if err != nil {
		return SentMessage{}, fmt.Errorf("dispatch: send to %s: %w", key, err)
	}
	var sent SentMessage
	err = d.Serialise(ctx, key, func(ctx context.Context) error {
		e, ok, err := store.Get(key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", sessions.ErrNotFound, key)
		}
		out := channels.Outbound{Address: channels.Address{Channel: e.LastChannel, AccountID: e.LastAccountID,
			ChatID: e.LastTo, ThreadID: e.LastThreadID}}
		if key.ThreadKind == routing.Topic {
			out.IsTopic = true
		}
		if e.LastChannel == "" || e.LastTo == "" || d.adapter(out.Channel, out.AccountID) == nil {
			return fmt.Errorf("%w (last channel %q, account %q)", ErrNoChat, e.LastChannel, e.LastAccountID)
		}
		tr, err := store.TranscriptOf(e)
		if err != nil {
			return err
		}
		msg := sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}},
			Provider: OperatorProvider, StopReason: "stop", Timestamp: d.opts.Now().UnixMilli()}
		ids, err := tr.Append(ctx, msg)
		if err != nil {
			return fmt.Errorf("record in the transcript: %w", err)
		}
		entryID := ""
		if len(ids) > 0 {
			entryID = ids[0]
		}
		store.AddCounters(key, sessions.Counters{Messages: 1})
		out.Text, out.SessionID = text, e.SessionID
		if !d.outbox.deliver(ctx, key, agentID, nil, out, entryID) {
			return ErrNotSent
		}
		sent = SentMessage{SessionID: e.SessionID, EntryID: entryID, Channel: out.Channel, AccountID: out.AccountID,
			ChatID: out.ChatID, ThreadID: out.ThreadID}
		return nil
	})
	if err != nil {
		return SentMessage{}, fmt.Errorf("dispatch: send to %s: %w", key, err)
	}
	d.log.Info("operator message sent", zap.Stringer("session_key", key), zap.String("session_id", sent.SessionID),
		zap.String("channel", sent.Channel), zap.String("chat_id", sent.ChatID))
	return sent, nil
}

func checkOperatorText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return fmt.Errorf("%w: empty", ErrBadText)
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return fmt.Errorf("%w: not UTF-8 text", ErrBadText)
	case utf8.RuneCountInString(text) > MaxOperatorText:
		return fmt.Errorf("%w: longer than %d characters", ErrBadText, MaxOperatorText)
	}
	return nil
}
