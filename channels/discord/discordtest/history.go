package discordtest

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// The channel history (GET /channels/{id}/messages): every message of a
// channel, the users' (SendMessageCreate, delivered live or not) and the
// bot's posts, as Discord keeps them whether a bot was connected or not.
// A bot that was down catches up through it.

func (s *Server) historyRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v9/channels/{id}/messages", s.auth(s.serveHistory))
}

// keepLocked adds m to its channel's history. s.mu is held.
func (s *Server) keepLocked(m *discordgo.Message) {
	if s.history == nil {
		s.history = map[string][]*discordgo.Message{}
	}
	c := *m
	s.history[m.ChannelID] = append(s.history[m.ChannelID], &c)
}

// serveHistory answers with the channel's messages after the `after` id
// (or before `before`), at most limit (1–100, default 50) of them, newest
// first as Discord does: with after, the oldest ones following it. REST
// message objects carry no guild_id, as on Discord. A deleted channel
// (DeleteChannel) answers 404.
func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: limit", "code": 50035})
			return
		}
		limit = n
	}
	after, before := q.Get("after"), q.Get("before")
	s.mu.Lock()
	s.historyReads++
	if ref, ok := s.refused[r.PathValue("id")]; ok && ref.status == http.StatusNotFound { // deleted (refuse.go)
		s.mu.Unlock()
		writeJSON(w, ref.status, ref.body)
		return
	}
	var out []discordgo.Message
	for _, m := range s.history[r.PathValue("id")] {
		if (after != "" && snowflakeCmp(m.ID, after) <= 0) || (before != "" && snowflakeCmp(m.ID, before) >= 0) {
			continue
		}
		c := *m
		c.GuildID = ""
		out = append(out, c)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b discordgo.Message) int { return snowflakeCmp(a.ID, b.ID) })
	if len(out) > limit {
		if after != "" {
			out = out[:limit]
		} else {
			out = out[len(out)-limit:]
		}
	}
	slices.Reverse(out)
	writeJSON(w, http.StatusOK, out)
}

// HistoryReads counts GET /channels/{id}/messages requests.
func (s *Server) HistoryReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.historyReads
}

// snowflakeCmp orders message ids as numbers.
func snowflakeCmp(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
	}
	return cmp.Compare(x, y)
}

// DeleteMessage deletes a user's message: it leaves its channel's history
// and MESSAGE_DELETE is dispatched, as when its author deletes it.
func (s *Server) DeleteMessage(channel, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history[channel] = slices.DeleteFunc(s.history[channel], func(m *discordgo.Message) bool { return m.ID == id })
	s.dispatchLocked("MESSAGE_DELETE", &discordgo.Message{ID: id, ChannelID: channel})
	s.notifyLocked()
}
