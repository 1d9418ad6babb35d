package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// Reaction is one setMessageReaction call: the bot's reaction emoji on a
// message after it (none: the bot's reaction was removed).
type Reaction struct {
	ChatID    int64
	MessageID int
	Emoji     []string
}

// Reactions returns a copy of every setMessageReaction call so far.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

// WaitReactions waits until at least n setMessageReaction calls were made
// and returns them all.
func (s *Server) WaitReactions(ctx context.Context, n int) ([]Reaction, error) {
	err := s.wait(ctx, func() bool { return len(s.reactions) >= n })
	return s.Reactions(), err
}

// setMessageReaction checks the call as Telegram does (chat, message id,
// a JSON list of ReactionType objects) and records it.
func (s *Server) setMessageReaction(w http.ResponseWriter, r *http.Request) {
	chat := formInt(r, "chat_id")
	id := int(formInt(r, "message_id"))
	var list []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	raw := r.Form.Get("reaction")
	if raw == "" {
		raw = "[]"
	}
	s.mu.Lock()
	newID, migrated := s.migrated[chat]
	s.mu.Unlock()
	switch err := json.Unmarshal([]byte(raw), &list); {
	case migrated:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateTo: newID})
		return
	case chat == 0:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: chat not found"})
		return
	case id == 0:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message to react not found"})
		return
	case err != nil:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: can't parse reaction types JSON object"})
		return
	}
	rec := Reaction{ChatID: chat, MessageID: id}
	for _, t := range list {
		if t.Type != "emoji" || strings.TrimSpace(t.Emoji) == "" {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: REACTION_INVALID"})
			return
		}
		rec.Emoji = append(rec.Emoji, t.Emoji)
	}
	s.mu.Lock()
	s.reactions = append(s.reactions, rec)
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, true)
}
