package telegramtest

import "time"

// UserReaction queues a message_reaction update: user fromID (named name)
// set emoji as their reaction to message messageID of chatID (chatType
// "private", "group" or "supergroup"; old is their previous reaction, ""
// for none). It returns the update id.
func (s *Server) UserReaction(chatID int64, chatType string, messageID int, fromID int64, name, old, emoji string) int {
	react := func(e string) []any {
		if e == "" {
			return []any{}
		}
		return []any{map[string]any{"type": "emoji", "emoji": e}}
	}
	chat := map[string]any{"id": chatID, "type": chatType}
	if chatType != "private" {
		chat["title"] = "group"
	}
	return s.AddUpdate(map[string]any{"message_reaction": map[string]any{
		"chat": chat, "message_id": messageID, "date": time.Now().Unix(),
		"user":         map[string]any{"id": fromID, "is_bot": false, "first_name": name},
		"old_reaction": react(old), "new_reaction": react(emoji),
	}})
}
