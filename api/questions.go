package api

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The web chat's questions with buttons (the message tool's ask,
// channels/web/choices.go) in a session's history: GET
// /api/agents/{id}/sessions/{sid} answers them beside the messages, so the
// page draws them again after a reload or a restart as it drew them live.
//
// Nothing of the buttons' signatures is stored: the transcript already
// holds what signs them again (the ask call's text and labels, the
// result's question id, the time of the result), and the model's context
// is those messages as they are. The buttons are signed again here with
// the gateway's choice key for the question's id and time asked
// (channels.ChoiceKeys.QuestionFor, as the web adapter signed them live),
// so a press on a redrawn button is verified like a live one, and expires
// with the question.
//
// A question already answered (its press is in the transcript: the user
// message that took the press's journal record) comes without data: the
// page draws its buttons disabled, the chosen one marked. A question
// unanswered whose buttons have expired (channels.ChoiceKeys.Expired: a
// press would be refused as expired) comes without data too, marked
// expired: the page draws its buttons disabled and says it expired.
// Answered wins: an answered question is never marked expired.

// webChannel and webAccount are the web chat's channel and only account
// (channels/web's Name and AccountID; api does not import the adapter).
const (
	webChannel = "web"
	webAccount = "default"
)

// question is a question of the history as the page gets it: a live
// choices event's fields, plus the tool call that asked (the page draws it
// after that call's chip) and whether it was answered, with which label.
type question struct {
	ToolCallID string           `json:"toolCallId"`
	MessageID  string           `json:"messageId"`
	Text       string           `json:"text"`
	Choices    []questionButton `json:"choices"`
	Answered   bool             `json:"answered,omitempty"`
	Chosen     string           `json:"chosen,omitempty"`
	Expired    bool             `json:"expired,omitempty"` // unanswered, its buttons expired

	asked time.Time // when it was asked (its result's time): its buttons expire from it
}

type questionButton struct {
	Label string `json:"label"`
	Data  string `json:"data,omitempty"` // "" once answered or expired
}

// askCall is what questionsOf reads of the message tool's ask: its
// arguments, and its result.
type askCall struct {
	Action  string   `json:"action"`
	Text    string   `json:"text"`
	Choices []string `json:"choices"`
}

type askResult struct {
	OK        bool   `json:"ok"`
	Action    string `json:"action"`
	MessageID string `json:"messageId"`
}

// questionsOf lists the questions asked in msgs, the history of the web
// session key, with their buttons signed by keys; nil for a session of
// another channel, or without keys.
func questionsOf(keys *channels.ChoiceKeys, key routing.Key, msgs []sessions.Message) []question {
	if keys == nil || key.Channel != webChannel || key.Kind != routing.Direct || key.Peer == "" {
		return nil
	}
	chat := channels.Address{Channel: webChannel, AccountID: webAccount, ChatID: key.Peer}
	calls := map[string]askCall{}
	var out []question
	byRecord := map[string]int{} // a press's journal record id → its question in out
	for _, m := range msgs {
		switch m.Role {
		case sessions.RoleAssistant:
			for _, c := range m.Content {
				var a askCall
				if c.Type == sessions.BlockToolCall && c.Name == agents.MessageToolName && c.ID != "" &&
					json.Unmarshal(c.Arguments, &a) == nil && strings.EqualFold(strings.TrimSpace(a.Action), "ask") {
					calls[c.ID] = a
				}
			}
		case sessions.RoleToolResult:
			q, ok := askedIn(keys, chat, calls, m)
			if ok {
				byRecord[channels.MessageRecordID(chat, q.MessageID)] = len(out)
				out = append(out, q)
			}
		case sessions.RoleUser:
			for _, id := range m.RecordIDs {
				if i, ok := byRecord[id]; ok && !out[i].Answered {
					answer(&out[i], m.Text())
				}
			}
		}
	}
	for i := range out {
		if !out[i].Answered && keys.Expired(out[i].asked) {
			expire(&out[i])
		}
	}
	return out
}

// askedIn is the question tool result m reports, when it is an ask that
// succeeded and its call is in calls.
func askedIn(keys *channels.ChoiceKeys, chat channels.Address, calls map[string]askCall, m sessions.Message) (question, bool) {
	a, ok := calls[m.ToolCallID]
	if !ok || m.IsError || m.ToolName != agents.MessageToolName {
		return question{}, false
	}
	var r askResult
	if json.Unmarshal([]byte(m.Text()), &r) != nil || !r.OK || r.Action != "ask" || r.MessageID == "" {
		return question{}, false
	}
	labels := make([]string, len(a.Choices))
	for i, l := range a.Choices {
		labels[i] = strings.TrimSpace(l) // as the message tool took them
	}
	asked := time.UnixMilli(m.Timestamp)
	signed, err := keys.QuestionFor(chat, r.MessageID, asked, labels)
	if err != nil {
		return question{}, false // not a question the tool asked
	}
	q := question{ToolCallID: m.ToolCallID, MessageID: r.MessageID, Text: a.Text, asked: asked}
	for _, c := range signed {
		q.Choices = append(q.Choices, questionButton{Label: c.Label, Data: c.Data})
	}
	return q, true
}

// answer marks q answered by the user message text: the chosen label is
// the longest one text ends with (the message is the label, perhaps merged
// after an earlier message).
func answer(q *question, text string) {
	q.Answered = true
	text = strings.TrimSpace(text)
	for i := range q.Choices {
		l := q.Choices[i].Label
		if strings.HasSuffix(text, l) && len(l) > len(q.Chosen) {
			q.Chosen = l
		}
		q.Choices[i].Data = ""
	}
}

// expire marks q expired: its buttons keep their labels, not their data.
func expire(q *question) {
	q.Expired = true
	for i := range q.Choices {
		q.Choices[i].Data = ""
	}
}
