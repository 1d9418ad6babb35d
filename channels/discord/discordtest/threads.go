package discordtest

import (
	"encoding/json"
	"net/http"

	"github.com/bwmarrin/discordgo"
)

// StartedThread is a thread the bot started from a message.
type StartedThread struct {
	ParentID  string
	MessageID string
	ThreadID  string
	Name      string
}

// serveStartThread is POST /channels/{id}/messages/{mid}/threads: it
// creates a public thread on the message, known to later channel lookups,
// and dispatches THREAD_CREATE as Discord does. As on Discord, the thread's
// id is the message's, the message's history copy names it (its thread
// field), and a second start on the same message is refused (code
// 160004).
func (s *Server) serveStartThread(w http.ResponseWriter, r *http.Request) {
	var body discordgo.ThreadStart
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" || len([]rune(body.Name)) > 100 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: name", "code": 50035})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, ok := s.channels[r.PathValue("id")]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": 10003})
		return
	}
	mid := r.PathValue("mid")
	if _, taken := s.channels[mid]; taken {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "A thread has already been created for this message",
			"code": discordgo.ErrCodeThreadAlreadyCreatedForThisMessage})
		return
	}
	th := &discordgo.Channel{ID: mid, GuildID: parent.GuildID, ParentID: parent.ID,
		Name: body.Name, Type: discordgo.ChannelTypeGuildPublicThread}
	s.channels[th.ID] = th
	for _, m := range s.history[parent.ID] {
		if m.ID == mid {
			c := *th
			m.Thread = &c
		}
	}
	s.threads = append(s.threads, StartedThread{ParentID: parent.ID, MessageID: mid, ThreadID: th.ID, Name: body.Name})
	s.dispatchLocked("THREAD_CREATE", th)
	s.notifyLocked()
	writeJSON(w, http.StatusCreated, th)
}

// Threads returns the threads the bot started, in order.
func (s *Server) Threads() []StartedThread {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StartedThread(nil), s.threads...)
}
