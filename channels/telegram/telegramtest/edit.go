package telegramtest

import (
	"context"
	"net/http"
	"slices"
	"time"
)

// Deleted is one deleteMessage call that removed a message.
type Deleted struct {
	ChatID    int64
	MessageID int
	At        time.Time
}

// editMessageText changes a message the bot sent. Like Telegram it refuses
// an unknown or deleted message and an edit that changes nothing ("message
// is not modified"); a successful edit is recorded in Sent.
func (s *Server) editMessageText(w http.ResponseWriter, r *http.Request) {
	chat := formInt(r, "chat_id")
	id := int(formInt(r, "message_id"))
	text, mode := r.Form.Get("text"), r.Form.Get("parse_mode")
	if f, bad := s.checkSend(chat, 0, text, mode); bad {
		writeErr(w, f)
		return
	}
	s.mu.Lock()
	cur, ok := s.currentLocked(chat, id)
	if !ok {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message to edit not found"})
		return
	}
	if cur.Text == text && cur.ParseMode == mode {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"})
		return
	}
	ed := Sent{Method: "editMessageText", MessageID: id, ChatID: chat, ThreadID: cur.ThreadID, Text: text, ParseMode: mode, Via: viaOf(r)}
	at := s.recordLocked(ed)
	s.mu.Unlock()
	s.onSent(ed, at)
	writeOK(w, s.messageJSON(ed))
}

// deleteMessage removes a message; an unknown or deleted one is refused.
func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	chat := formInt(r, "chat_id")
	id := int(formInt(r, "message_id"))
	s.mu.Lock()
	if _, ok := s.currentLocked(chat, id); !ok {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message to delete not found"})
		return
	}
	s.deleted = append(s.deleted, Deleted{ChatID: chat, MessageID: id, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, true)
}

// currentLocked is message id of chat as it shows now (its last edit);
// false if it was never sent or was deleted. s.mu must be held.
func (s *Server) currentLocked(chat int64, id int) (Sent, bool) {
	if slices.ContainsFunc(s.deleted, func(d Deleted) bool { return d.ChatID == chat && d.MessageID == id }) {
		return Sent{}, false
	}
	var cur Sent
	found := false
	for _, m := range s.sent {
		if m.MessageID == id && m.ChatID == chat {
			if !found {
				cur = m
			} else {
				cur.Text, cur.ParseMode = m.Text, m.ParseMode
			}
			found = true
		}
	}
	return cur, found
}

// Deletions returns every deleteMessage call that removed a message.
func (s *Server) Deletions() []Deleted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deleted)
}

// Edit is one recorded editMessageText with the time it was recorded.
type Edit struct {
	Sent
	At time.Time
}

// Edits returns the edits of message id in chat, in order.
func (s *Server) Edits(chat int64, id int) []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Edit
	for i, m := range s.sent {
		if m.Method == "editMessageText" && m.ChatID == chat && m.MessageID == id {
			out = append(out, Edit{Sent: m, At: s.sentAt[i]})
		}
	}
	return out
}

// Visible returns the messages of chat as a person sees them now: each
// sent message with its latest text (Method is that of its creation),
// deleted ones left out, in the order they were sent.
func (s *Server) Visible(chat int64) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if m.Method != "sendMessage" || m.ChatID != chat {
			continue
		}
		if cur, ok := s.currentLocked(chat, m.MessageID); ok {
			out = append(out, cur)
		}
	}
	return out
}

// WaitDeleted waits until at least n messages were deleted.
func (s *Server) WaitDeleted(ctx context.Context, n int) ([]Deleted, error) {
	err := s.wait(ctx, func() bool { return len(s.deleted) >= n })
	return s.Deletions(), err
}

func (s *Server) recordCallLocked(method string) {
	if s.callAt == nil {
		s.callAt = map[string][]time.Time{}
	}
	s.callAt[method] = append(s.callAt[method], time.Now())
}

// CallTimes returns when each call of method arrived (failed ones included).
func (s *Server) CallTimes(method string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.callAt[method])
}
