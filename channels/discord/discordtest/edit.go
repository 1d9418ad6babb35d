package discordtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Edit is one PATCH of a message the bot posted, with when it arrived.
type Edit struct {
	ChannelID, MessageID, Content string
	At                            time.Time
}

// Deleted is one DELETE of a message the bot posted.
type Deleted struct {
	ChannelID, MessageID string
	At                   time.Time
}

// liveLocked is the message's current content; false if it was never
// posted in channel or was deleted.
func (s *Server) liveLocked(channel, id string) (string, bool) {
	if slices.ContainsFunc(s.deleted, func(d Deleted) bool { return d.ChannelID == channel && d.MessageID == id }) {
		return "", false
	}
	content, found := "", false
	for _, m := range s.sent {
		if m.ChannelID == channel && m.MessageID == id {
			content, found = m.Content, true
		}
	}
	for _, e := range s.edits {
		if e.ChannelID == channel && e.MessageID == id {
			content = e.Content
		}
	}
	return content, found
}

var unknownMessage = map[string]any{"message": "Unknown Message", "code": 10008}

// serveEdit is PATCH /channels/{id}/messages/{mid} (content only).
func (s *Server) serveEdit(w http.ResponseWriter, r *http.Request) {
	var body discordgo.MessageEdit
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Content == nil ||
		*body.Content == "" || len([]rune(*body.Content)) > 2000 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: content", "code": 50035})
		return
	}
	channel, id := r.PathValue("id"), r.PathValue("mid")
	s.mu.Lock()
	if rl, ok := takeLimitLocked(&s.editLimits); ok {
		s.writeRateLimitLocked(w, rl)
		s.mu.Unlock()
		return
	}
	if _, ok := s.liveLocked(channel, id); !ok {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, unknownMessage)
		return
	}
	s.edits = append(s.edits, Edit{ChannelID: channel, MessageID: id, Content: *body.Content, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, &discordgo.Message{ID: id, ChannelID: channel, Content: *body.Content,
		Author: s.opts.BotUser, Timestamp: time.Now().UTC()})
}

// serveDelete is DELETE /channels/{id}/messages/{mid}.
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	channel, id := r.PathValue("id"), r.PathValue("mid")
	s.mu.Lock()
	if _, ok := s.liveLocked(channel, id); !ok {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, unknownMessage)
		return
	}
	s.deleted = append(s.deleted, Deleted{ChannelID: channel, MessageID: id, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Edits returns every edit so far.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.edits)
}

// Deletions returns every delete so far.
func (s *Server) Deletions() []Deleted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deleted)
}

// Visible returns channel's messages as a person sees them now: each
// posted message with its latest content, deleted ones left out.
func (s *Server) Visible(channel string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if m.ChannelID != channel {
			continue
		}
		if content, ok := s.liveLocked(channel, m.MessageID); ok {
			m.Content = content
			out = append(out, m)
		}
	}
	return out
}
