package discordtest

import (
	"net/http"

	"github.com/bwmarrin/discordgo"
)

// What the fake knows of guilds and their members: GET /guilds/{id} (the
// owner and the roles with their permissions), GET
// /guilds/{id}/members/{uid} (a member's roles), and the permissions a
// slash command's member carries. Channel permission overwrites are the
// channels' own (Options.Guilds, AddChannel).

// SetGuild makes g known to GET /guilds/{id}, replacing a guild of the same
// id (Options.Guilds are known from the start). Only its id, owner and roles
// matter; it is not announced on the gateway.
func (s *Server) SetGuild(g *discordgo.Guild) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guilds[g.ID] = g
}

// SetMember makes m (with its User set) a member of guild guildID for GET
// /guilds/{id}/members/{uid} and for the slash commands it sends.
func (s *Server) SetMember(guildID string, m *discordgo.Member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[guildID] == nil {
		s.members[guildID] = map[string]*discordgo.Member{}
	}
	mc := *m
	mc.GuildID = guildID
	s.members[guildID][m.User.ID] = &mc
}

// MemberLookups is how many GET /guilds/{id}/members/{uid} requests were
// made, answered or not.
func (s *Server) MemberLookups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memberLookups
}

// GuildLookups is how many GET /guilds/{id} requests were made.
func (s *Server) GuildLookups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.guildLookups
}

func (s *Server) serveGuild(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.guildLookups++
	g, ok := s.guilds[r.PathValue("id")]
	var body discordgo.Guild
	if ok {
		// The REST guild carries neither channels nor members.
		body = discordgo.Guild{ID: g.ID, Name: g.Name, OwnerID: g.OwnerID, Roles: g.Roles}
	}
	s.notifyLocked()
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Guild", "code": 10004})
		return
	}
	writeJSON(w, http.StatusOK, &body)
}

func (s *Server) serveMember(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.memberLookups++
	m, ok := s.members[r.PathValue("id")][r.PathValue("uid")]
	var body discordgo.Member
	if ok {
		body = *m
		body.GuildID = "" // Discord's member object has no guild id
	}
	s.notifyLocked()
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Member", "code": 10007})
		return
	}
	writeJSON(w, http.StatusOK, &body)
}

// slashMemberLocked is the member object of a slash command from user in
// channelID of guildID: their roles, and their permissions in the channel
// (a thread's parent) as Discord computes them (owner, roles, overwrites),
// when the fake knows the guild. s.mu must be held.
func (s *Server) slashMemberLocked(guildID, channelID string, user *discordgo.User) *discordgo.Member {
	m := &discordgo.Member{User: user, GuildID: guildID}
	if known, ok := s.members[guildID][user.ID]; ok {
		m.Roles = append([]string(nil), known.Roles...)
	}
	g, ok := s.guilds[guildID]
	ch := s.channels[channelID]
	if ch != nil && ch.IsThread() && s.channels[ch.ParentID] != nil {
		ch = s.channels[ch.ParentID]
	}
	if !ok || ch == nil {
		return m
	}
	st := discordgo.NewState()
	_ = st.GuildAdd(&discordgo.Guild{ID: g.ID, OwnerID: g.OwnerID, Roles: g.Roles})
	_ = st.ChannelAdd(&discordgo.Channel{ID: ch.ID, GuildID: g.ID, Type: ch.Type, PermissionOverwrites: ch.PermissionOverwrites})
	_ = st.MemberAdd(&discordgo.Member{User: user, GuildID: g.ID, Roles: m.Roles})
	if p, err := st.UserChannelPermissions(user.ID, ch.ID); err == nil {
		m.Permissions = p
	}
	return m
}
