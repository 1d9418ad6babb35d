package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Inline keyboards and their presses, as the Bot API has them: a
// sendMessage with reply_markup {"inline_keyboard": [[{text,
// callback_data}]]} shows buttons; a press arrives as a callback_query
// update carrying the message (with its reply_markup as it shows now) and
// the button's callback_data; the bot answers it with answerCallbackQuery
// (once, else "query is too old") and changes or removes the keyboard with
// editMessageReplyMarkup (without reply_markup: removed).

// Button is one inline keyboard button.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	URL          string `json:"url,omitempty"`
}

type inlineKeyboard struct {
	InlineKeyboard [][]Button `json:"inline_keyboard"`
}

// CallbackAnswer is one answerCallbackQuery call that was accepted.
type CallbackAnswer struct {
	QueryID   string
	Text      string
	ShowAlert bool
}

// MarkupEdit is one accepted editMessageReplyMarkup: Keyboard is the new
// one, nil when it was removed.
type MarkupEdit struct {
	ChatID    int64
	MessageID int
	Keyboard  [][]Button
}

type msgKey struct {
	chat int64
	id   int
}

// parseMarkup reads a reply_markup form field; "" is no keyboard.
func parseMarkup(raw string) ([][]Button, bool) {
	if raw == "" {
		return nil, true
	}
	var m inlineKeyboard
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil, false
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" || len(b.CallbackData) > 64 || (b.CallbackData == "" && b.URL == "") {
				return nil, false
			}
		}
	}
	if len(m.InlineKeyboard) == 0 {
		return nil, true
	}
	return m.InlineKeyboard, true
}

// setKeyboardLocked records message (chat, id)'s keyboard; s.mu held.
func (s *Server) setKeyboardLocked(chat int64, id int, kb [][]Button) {
	if s.keyboards == nil {
		s.keyboards = map[msgKey][][]Button{}
	}
	if kb == nil {
		delete(s.keyboards, msgKey{chat, id})
		return
	}
	s.keyboards[msgKey{chat, id}] = kb
}

// SetKeyboard makes message id of chat show kb, as a client shows a
// message the bot did not send there itself (a group's history shown in
// the supergroup it was upgraded to); a press on it then carries chat.
func (s *Server) SetKeyboard(chat int64, id int, kb [][]Button) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setKeyboardLocked(chat, id, slices.Clone(kb))
}

// Keyboard returns the buttons message id of chat shows now (nil: none).
func (s *Server) Keyboard(chat int64, id int) [][]Button {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keyboards[msgKey{chat, id}])
}

// editMessageReplyMarkup replaces or (without reply_markup) removes a
// message's inline keyboard; an unknown message and a change to the same
// markup are refused as Telegram refuses them.
func (s *Server) editMessageReplyMarkup(w http.ResponseWriter, r *http.Request) {
	chat := formInt(r, "chat_id")
	id := int(formInt(r, "message_id"))
	kb, ok := parseMarkup(r.Form.Get("reply_markup"))
	if !ok {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: can't parse reply keyboard markup JSON object"})
		return
	}
	s.mu.Lock()
	cur, found := s.currentLocked(chat, id)
	if !found {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message to edit not found"})
		return
	}
	old := s.keyboards[msgKey{chat, id}]
	b1, _ := json.Marshal(old)
	b2, _ := json.Marshal(kb)
	if string(b1) == string(b2) {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"})
		return
	}
	s.setKeyboardLocked(chat, id, kb)
	s.markupEdits = append(s.markupEdits, MarkupEdit{ChatID: chat, MessageID: id, Keyboard: kb})
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, s.messageJSON(cur))
}

// MarkupEdits returns the accepted editMessageReplyMarkup calls in order.
func (s *Server) MarkupEdits() []MarkupEdit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.markupEdits)
}

// WaitMarkupEdits waits until at least n keyboards were changed.
func (s *Server) WaitMarkupEdits(ctx context.Context, n int) ([]MarkupEdit, error) {
	err := s.wait(ctx, func() bool { return len(s.markupEdits) >= n })
	return s.MarkupEdits(), err
}

// answerCallbackQuery answers a press once; an unknown or already
// answered query is refused ("query is too old").
func (s *Server) answerCallbackQuery(w http.ResponseWriter, r *http.Request) {
	id := r.Form.Get("callback_query_id")
	s.mu.Lock()
	if !s.queries[id] {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 400, Description: "Bad Request: query is too old and response timeout expired or query ID is invalid"})
		return
	}
	delete(s.queries, id)
	s.answers = append(s.answers, CallbackAnswer{QueryID: id, Text: r.Form.Get("text"), ShowAlert: r.Form.Get("show_alert") == "true"})
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, true)
}

// CallbackAnswers returns the accepted answerCallbackQuery calls in order.
func (s *Server) CallbackAnswers() []CallbackAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers)
}

// WaitCallbackAnswers waits until at least n presses were answered.
func (s *Server) WaitCallbackAnswers(ctx context.Context, n int) ([]CallbackAnswer, error) {
	err := s.wait(ctx, func() bool { return len(s.answers) >= n })
	return s.CallbackAnswers(), err
}

// Press queues the callback_query of user fromID (named name) pressing the
// button labelled label of message messageID in chat, as the message shows
// now; it returns the update id and the query id, or ok false when the
// message shows no such button.
func (s *Server) Press(chat int64, messageID int, fromID int64, name, label string) (updateID int, queryID string, ok bool) {
	s.mu.Lock()
	var data string
	for _, row := range s.keyboards[msgKey{chat, messageID}] {
		for _, b := range row {
			if b.Text == label && b.CallbackData != "" {
				data, ok = b.CallbackData, true
			}
		}
	}
	s.mu.Unlock()
	if !ok {
		return 0, "", false
	}
	updateID, queryID = s.PressData(chat, messageID, fromID, name, data)
	return updateID, queryID, true
}

// newQueryLocked registers a new callback query of user fromID (answered
// by answerCallbackQuery) and returns its id. s.mu is held.
func (s *Server) newQueryLocked(fromID int64) string {
	s.nextQuery++
	id := strconv.FormatInt(int64(s.nextQuery)*7919+fromID, 10)
	if s.queries == nil {
		s.queries = map[string]bool{}
	}
	s.queries[id] = true
	return id
}

// PressInaccessible queues the callback_query of a press on a message too
// old for Telegram to show the bot: the query carries an
// InaccessibleMessage (chat and message id, date 0, no keyboard).
func (s *Server) PressInaccessible(chat int64, chatType string, messageID int, fromID int64, name, data string) (updateID int, queryID string) {
	s.mu.Lock()
	queryID = s.newQueryLocked(fromID)
	s.mu.Unlock()
	updateID = s.AddUpdate(map[string]any{"callback_query": map[string]any{
		"id":            queryID,
		"from":          map[string]any{"id": fromID, "is_bot": false, "first_name": name},
		"message":       map[string]any{"chat": map[string]any{"id": chat, "type": chatType}, "message_id": messageID, "date": 0},
		"chat_instance": strconv.FormatInt(-chat*31, 10),
		"data":          data,
	}})
	return updateID, queryID
}

// PressData queues a callback_query with any callback_data, as a modified
// client can send (Telegram does not check it against the buttons).
func (s *Server) PressData(chat int64, messageID int, fromID int64, name, data string) (updateID int, queryID string) {
	s.mu.Lock()
	cur, found := s.currentLocked(chat, messageID)
	if !found {
		cur = Sent{MessageID: messageID, ChatID: chat}
	}
	queryID = s.newQueryLocked(fromID)
	kb := s.keyboards[msgKey{chat, messageID}]
	s.mu.Unlock()
	msg := s.messageJSON(cur)
	if kb != nil {
		msg["reply_markup"] = inlineKeyboard{InlineKeyboard: kb}
	}
	updateID = s.AddUpdate(map[string]any{"callback_query": map[string]any{
		"id":            queryID,
		"from":          map[string]any{"id": fromID, "is_bot": false, "first_name": name},
		"message":       msg,
		"chat_instance": strconv.FormatInt(-chat*31, 10),
		"data":          data,
		"date":          time.Now().Unix(),
	}})
	return updateID, queryID
}
