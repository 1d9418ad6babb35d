package discordtest

import (
	"net/http"

	"github.com/bwmarrin/discordgo"
)

// Channels the bot can no longer use: deleted ones (404, code 10003
// Unknown Channel) and ones it lost the permission to post in (403, code
// 50013 Missing Permissions). Posts, edits, deletions, typing and thread
// starts there are refused, and counted.

// refusal is how a channel refuses the bot.
type refusal struct {
	status int
	body   map[string]any
}

var (
	unknownChannel     = refusal{http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": discordgo.ErrCodeUnknownChannel}}
	missingPermissions = refusal{http.StatusForbidden, map[string]any{"message": "Missing Permissions", "code": discordgo.ErrCodeMissingPermissions}}
)

// usable answers requests to a channel that refuses the bot; others go to
// next.
func (s *Server) usable(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ref, refused := s.refused[r.PathValue("id")]
		if refused {
			s.refusals++
			s.notifyLocked()
		}
		s.mu.Unlock()
		if refused {
			writeJSON(w, ref.status, ref.body)
			return
		}
		next(w, r)
	}
}

// DeleteChannel deletes a channel (or thread): it is unknown from now on,
// and CHANNEL_DELETE (THREAD_DELETE for a thread) is dispatched.
func (s *Server) DeleteChannel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[id]
	delete(s.channels, id)
	s.refuseLocked(id, unknownChannel)
	if !ok {
		return
	}
	ev := "CHANNEL_DELETE"
	if c.IsThread() {
		ev = "THREAD_DELETE"
	}
	s.dispatchLocked(ev, c)
	s.notifyLocked()
}

// DenyChannel takes the bot's permission to send messages in a channel.
func (s *Server) DenyChannel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseLocked(id, missingPermissions)
}

func (s *Server) refuseLocked(id string, r refusal) {
	if s.refused == nil {
		s.refused = map[string]refusal{}
	}
	s.refused[id] = r
}

// Refusals is how many requests a deleted or denied channel refused.
func (s *Server) Refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusals
}
