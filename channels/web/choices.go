package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/channels"
)

// Choice buttons (channels/choices.go) in the web chat: a question is an
// `event: choices` {messageId, text, choices: [{label, data}]} in the
// stream of the turn that asked; the page shows the buttons and, on a
// click, disables them and posts the press as a chat request with
// `choice: {messageId, data, label}` in the same session. The press is
// checked (the HMAC covers the conversation, the question's id and the
// label, so none can be changed) before the handler sees it; its inbound
// message id is the question's, so a second press is the same turn: it
// gets the first press's stream (or, after a restart, its reply) and runs
// nothing again. The page's history (GET .../sessions/{sid}) carries the
// questions too, signed again from the transcript (api/questions.go), so
// a reload or a restart leaves them answerable.

// ChatChoice is a press in a ChatRequest.
type ChatChoice struct {
	MessageID string `json:"messageId"`
	Data      string `json:"data"`
	Label     string `json:"label"`
}

// choiceEvent is the data of a choices event.
type choiceEvent struct {
	MessageID string         `json:"messageId"`
	Text      string         `json:"text"`
	Choices   []choiceButton `json:"choices"`
}

type choiceButton struct {
	Label string `json:"label"`
	Data  string `json:"data"`
}

var _ channels.Asker = (*Adapter)(nil)

// Ask implements channels.Asker: the question goes to the streams of the
// requests out answers, under a new message id. Its buttons are signed
// again for that id (channels.ChoiceKeys.QuestionFor): a press must name
// the question it answers, and the page's history can redraw them after a
// reload or a restart (api/questions.go signs them the same way).
func (a *Adapter) Ask(ctx context.Context, out channels.Outbound, text string, choices []channels.Choice) (string, error) {
	if len(answered(out)) == 0 {
		return "", channels.Refusal(errors.New("web: ask: the turn answers no request")) // nothing shown
	}
	ev := choiceEvent{MessageID: uuid.NewString(), Text: text}
	if a.opts.Choices != nil {
		labels := make([]string, len(choices))
		for i, c := range choices {
			labels[i] = c.Label
		}
		signed, err := a.opts.Choices.QuestionFor(out.Address, ev.MessageID, time.Time{}, labels)
		if err != nil {
			return "", channels.Refusal(fmt.Errorf("web: ask: %w", err)) // nothing shown
		}
		choices = signed
	}
	for _, c := range choices {
		ev.Choices = append(ev.Choices, choiceButton{Label: c.Label, Data: c.Data})
	}
	a.push(out, sseEvent{name: "choices", data: ev})
	return ev.MessageID, nil
}

// pressInbound checks c, a press in conversation peer, and returns the
// turn it is; the error is the message for the client (status 400 or
// 403).
func (a *Adapter) pressInbound(c *ChatChoice, sessionID, peer string) (msg string, status int, err error) {
	if sessionID == "" {
		return "", http.StatusBadRequest, errors.New("choice: needs sessionId (the session that asked)")
	}
	if !canonicalUUID(c.MessageID) {
		return "", http.StatusBadRequest, fmt.Errorf("choice.messageId: %q is not a lower-case UUID", c.MessageID)
	}
	if a.opts.Choices == nil {
		return "", http.StatusForbidden, errors.New(channels.PressInvalidText)
	}
	addr := channels.Address{Channel: Name, AccountID: "default", ChatID: peer}
	if err := a.opts.Choices.VerifyQuestion(addr, c.MessageID, c.Data, c.Label); err != nil {
		return "", http.StatusForbidden, errors.New(channels.PressAnswer(err, nil))
	}
	return c.MessageID, 0, nil
}
