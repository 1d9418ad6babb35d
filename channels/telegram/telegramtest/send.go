package telegramtest

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Messages the bot sends: sendMessage, its checks, sendChatAction.

func formInt(r *http.Request, key string) int64 {
	n, _ := strconv.ParseInt(r.Form.Get(key), 10, 64)
	return n
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	chat := formInt(r, "chat_id")
	thread := int(formInt(r, "message_thread_id"))
	text, mode := r.Form.Get("text"), r.Form.Get("parse_mode")
	if f, bad := s.checkSend(chat, thread, text, mode); bad {
		writeErr(w, f)
		return
	}
	kb, ok := parseMarkup(r.Form.Get("reply_markup"))
	if !ok {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: can't parse reply keyboard markup JSON object"})
		return
	}
	s.mu.Lock()
	s.nextMsg++
	sent := Sent{Method: "sendMessage", MessageID: s.nextMsg, ChatID: chat, ThreadID: thread, Text: text,
		ParseMode: mode, ReplyTo: int(formInt(r, "reply_to_message_id")), Via: viaOf(r)}
	s.setKeyboardLocked(chat, sent.MessageID, kb)
	at := s.recordLocked(sent)
	s.mu.Unlock()
	s.onSent(sent, at)
	out := s.messageJSON(sent)
	if kb != nil {
		out["reply_markup"] = inlineKeyboard{InlineKeyboard: kb}
	}
	writeOK(w, out)
}

// checkSend applies Telegram's checks to an outgoing text.
func (s *Server) checkSend(chat int64, thread int, text, mode string) (Failure, bool) {
	s.mu.Lock()
	newID, migrated := s.migrated[chat]
	s.mu.Unlock()
	switch {
	case chat == 0:
		return Failure{Code: 400, Description: "Bad Request: chat not found"}, true
	case migrated:
		return Failure{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateTo: newID}, true
	case thread == 1:
		return Failure{Code: 400, Description: "Bad Request: message thread not found"}, true
	case strings.TrimSpace(text) == "":
		return Failure{Code: 400, Description: "Bad Request: message text is empty"}, true
	}
	visible := text
	if strings.EqualFold(mode, "HTML") {
		v, err := ParseHTML(text)
		if err != nil {
			return Failure{Code: 400, Description: "Bad Request: can't parse entities: " + err.Error()}, true
		}
		visible = v
		if strings.TrimSpace(visible) == "" {
			// Telegram counts the text left after its entities are parsed:
			// markup around nothing ("<pre></pre>") is an empty message.
			return Failure{Code: 400, Description: "Bad Request: message text is empty"}, true
		}
	}
	if utf16Len(visible) > 4096 {
		return Failure{Code: 400, Description: "Bad Request: message is too long"}, true
	}
	return Failure{}, false
}

func (s *Server) sendChatAction(w http.ResponseWriter, r *http.Request) {
	chat := formInt(r, "chat_id")
	thread := int(formInt(r, "message_thread_id"))
	if thread == 1 {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message thread not found"})
		return
	}
	s.mu.Lock()
	s.actions = append(s.actions, Action{ChatID: chat, ThreadID: thread, Action: r.Form.Get("action")})
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, true)
}

func (s *Server) messageJSON(m Sent) map[string]any {
	chatType := "private"
	if m.ChatID < 0 {
		chatType = "supergroup"
	}
	out := map[string]any{"message_id": m.MessageID, "date": time.Now().Unix(), "text": m.Text,
		"chat": map[string]any{"id": m.ChatID, "type": chatType}, "from": s.botUser()}
	if m.ThreadID != 0 {
		out["message_thread_id"] = m.ThreadID
		out["is_topic_message"] = true
	}
	return out
}
