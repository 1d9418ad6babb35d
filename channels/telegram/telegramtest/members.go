package telegramtest

import (
	"net/http"
)

// Chat member statuses of getChatMember's ChatMember object.
const (
	StatusCreator       = "creator"
	StatusAdministrator = "administrator"
	StatusMember        = "member"
	StatusRestricted    = "restricted"
	StatusLeft          = "left"
	StatusKicked        = "kicked"
)

// MemberLookup is one getChatMember call.
type MemberLookup struct {
	ChatID int64
	UserID int64
}

type memberKey struct{ chat, user int64 }

// SetChatMember sets user userID's status in chat chatID as getChatMember
// reports it (StatusCreator, StatusAdministrator, ...); users never set
// are StatusMember.
func (s *Server) SetChatMember(chatID, userID int64, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members == nil {
		s.members = map[memberKey]string{}
	}
	s.members[memberKey{chatID, userID}] = status
}

// MemberLookups returns a copy of every getChatMember call so far.
func (s *Server) MemberLookups() []MemberLookup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]MemberLookup(nil), s.lookups...)
}

// getChatMember answers a ChatMember object for user_id in chat_id, as
// Telegram does: the user and their status, with the rights an
// administrator holds. A chat migrated to a supergroup answers with
// migrate_to_chat_id; a missing id is "chat not found" or "user not found".
func (s *Server) getChatMember(w http.ResponseWriter, r *http.Request) {
	chat, user := formInt(r, "chat_id"), formInt(r, "user_id")
	s.mu.Lock()
	s.lookups = append(s.lookups, MemberLookup{ChatID: chat, UserID: user})
	newID, migrated := s.migrated[chat]
	status, ok := s.members[memberKey{chat, user}]
	s.notifyLocked()
	s.mu.Unlock()
	switch {
	case chat == 0:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: chat not found"})
		return
	case migrated:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateTo: newID})
		return
	case user <= 0:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: user not found"})
		return
	case !ok:
		status = StatusMember
	}
	m := map[string]any{
		"status": status,
		"user":   map[string]any{"id": user, "is_bot": false, "first_name": "User"},
	}
	switch status {
	case StatusCreator:
		m["is_anonymous"] = false
	case StatusAdministrator:
		m["can_be_edited"], m["is_anonymous"], m["can_manage_chat"] = false, false, true
		m["can_delete_messages"], m["can_restrict_members"], m["can_promote_members"] = true, true, false
	}
	writeOK(w, m)
}
