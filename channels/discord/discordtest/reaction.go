package discordtest

import (
	"context"
	"net/http"
)

// handleReactions adds the reaction endpoints (PUT and DELETE
// …/reactions/{emoji}/@me), recorded by Reactions.
func (s *Server) handleReactions(mux *http.ServeMux) {
	mux.HandleFunc("PUT /api/v9/channels/{id}/messages/{mid}/reactions/{emoji}/@me", s.auth(s.serveReaction))
	mux.HandleFunc("DELETE /api/v9/channels/{id}/messages/{mid}/reactions/{emoji}/@me", s.auth(s.serveReaction))
}

// Reaction is one reaction call of the bot.
type Reaction struct {
	ChannelID, MessageID, Emoji string
	Removed                     bool // DELETE …/@me rather than PUT
}

// Reactions returns a copy of every reaction call so far.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

// WaitReactions waits until at least n reaction calls were made and
// returns them all.
func (s *Server) WaitReactions(ctx context.Context, n int) ([]Reaction, error) {
	err := s.wait(ctx, func() bool { return len(s.reactions) >= n })
	return s.Reactions(), err
}

// serveReaction answers PUT and DELETE
// /channels/{id}/messages/{mid}/reactions/{emoji}/@me with 204.
func (s *Server) serveReaction(w http.ResponseWriter, r *http.Request) {
	rec := Reaction{ChannelID: r.PathValue("id"), MessageID: r.PathValue("mid"), Emoji: r.PathValue("emoji"),
		Removed: r.Method == http.MethodDelete}
	s.mu.Lock()
	s.reactions = append(s.reactions, rec)
	s.notifyLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
