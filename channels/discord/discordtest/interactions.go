package discordtest

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"
)

// DefaultApplicationID is the application id READY announces when
// Options.ApplicationID is empty (distinct from the bot user's id, as for
// older applications, so a client must read it from READY).
const DefaultApplicationID = "2000"

// Registration is one bulk overwrite of application commands.
type Registration struct {
	AppID string
	// GuildID is the guild the commands were registered in; "" for global.
	GuildID  string
	Commands []*discordgo.ApplicationCommand
}

// Reply kinds of InteractionReply.
const (
	ReplyCallback = "callback" // POST /interactions/{id}/{token}/callback
	ReplyEdit     = "edit"     // PATCH /webhooks/{app}/{token}/messages/@original
	ReplyFollowup = "followup" // POST /webhooks/{app}/{token}
	ReplyDelete   = "delete"   // DELETE /webhooks/{app}/{token}/messages/@original
)

// InteractionReply is one answer the bot gave to an interaction.
type InteractionReply struct {
	Kind          string // ReplyCallback, ReplyEdit or ReplyFollowup
	InteractionID string
	// Type is the callback's response type (5 deferred, 4 with a message);
	// 0 for edits and followups.
	Type    discordgo.InteractionResponseType
	Content string
	// Flags are the message flags sent (64 ephemeral); an edit carries
	// none (the original keeps the flags of the callback).
	Flags discordgo.MessageFlags
}

// interactionsFake is the fake's interaction state, guarded by Server.mu.
type interactionsFake struct {
	registrations []Registration
	refused       []Registration // overwrites answered 403 (RefuseRegistrations)
	refuse        int            // how many of the next overwrites to refuse
	replies       []InteractionReply
	open          map[string]*openInteraction // by token
}

type openInteraction struct {
	id      string
	acked   bool
	expired bool
	message string // the message of a component interaction
}

// interactionRoutes adds the application command, interaction callback
// and interaction webhook endpoints.
func (s *Server) interactionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /api/v9/applications/{app}/commands", s.auth(s.serveRegister))
	mux.HandleFunc("PUT /api/v9/applications/{app}/guilds/{guild}/commands", s.auth(s.serveRegister))
	mux.HandleFunc("POST /api/v9/interactions/{id}/{token}/callback", s.serveCallback)
	mux.HandleFunc("PATCH /api/v9/webhooks/{app}/{token}/messages/{msg}", s.serveWebhookEdit)
	mux.HandleFunc("POST /api/v9/webhooks/{app}/{token}", s.serveFollowup)
	mux.HandleFunc("DELETE /api/v9/webhooks/{app}/{token}/messages/{msg}", s.serveWebhookDelete)
}

// serveWebhookDelete deletes the original response of an acknowledged
// interaction (a deferral's "thinking…" too).
func (s *Server) serveWebhookDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	oi, ok := s.webhookTargetLocked(w, r)
	if !ok {
		return
	}
	if r.PathValue("msg") != "@original" {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	s.inter.replies = append(s.inter.replies, InteractionReply{Kind: ReplyDelete, InteractionID: oi.id})
	s.notifyLocked()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) appID() string {
	if s.opts.ApplicationID != "" {
		return s.opts.ApplicationID
	}
	return DefaultApplicationID
}

func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("app") != s.appID() {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Application", "code": 10002})
		return
	}
	var cmds []*discordgo.ApplicationCommand
	if err := json.NewDecoder(r.Body).Decode(&cmds); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	for _, c := range cmds {
		if c.Name == "" || len(c.Name) > 32 || c.Description == "" || len([]rune(c.Description)) > 100 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: name or description", "code": 50035})
			return
		}
	}
	s.mu.Lock()
	if s.inter.refuse > 0 {
		s.inter.refuse--
		s.inter.refused = append(s.inter.refused, Registration{AppID: r.PathValue("app"), GuildID: r.PathValue("guild"), Commands: cmds})
		s.notifyLocked()
		s.mu.Unlock()
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Missing Access", "code": 50001})
		return
	}
	for _, c := range cmds {
		c.ID, c.ApplicationID, c.GuildID = s.newIDLocked(), s.appID(), r.PathValue("guild")
	}
	s.inter.registrations = append(s.inter.registrations, Registration{AppID: r.PathValue("app"),
		GuildID: r.PathValue("guild"), Commands: cmds})
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, cmds)
}

// webhookErr answers like Discord for an interaction token it does not
// accept (unknown, expired) or a reply before the interaction is acknowledged.
func webhookErr(w http.ResponseWriter, status int) {
	if status == http.StatusNotFound {
		writeJSON(w, status, map[string]any{"message": "Unknown Webhook", "code": 10015})
		return
	}
	writeJSON(w, status, map[string]any{"message": "Invalid Webhook Token", "code": 50027})
}

func (s *Server) serveCallback(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data *struct {
			Content    string                 `json:"content"`
			Flags      discordgo.MessageFlags `json:"flags"`
			Components json.RawMessage        `json:"components"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	oi := s.inter.open[r.PathValue("token")]
	switch {
	case oi == nil || oi.id != r.PathValue("id"):
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown interaction", "code": 10062})
		return
	case oi.expired:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown interaction", "code": 10062})
		return
	case oi.acked:
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
		return
	}
	rep := InteractionReply{Kind: ReplyCallback, InteractionID: oi.id, Type: body.Type}
	if body.Data != nil {
		rep.Content, rep.Flags = body.Data.Content, body.Data.Flags
	}
	if body.Type == discordgo.InteractionResponseChannelMessageWithSource && (rep.Content == "" || len([]rune(rep.Content)) > 2000) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: content", "code": 50035})
		return
	}
	switch body.Type {
	case discordgo.InteractionResponseUpdateMessage, discordgo.InteractionResponseDeferredMessageUpdate:
		if oi.message == "" { // only a component interaction has a message to update
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Interaction callback type invalid for this interaction", "code": 40050})
			return
		}
	}
	if body.Type == discordgo.InteractionResponseUpdateMessage && body.Data != nil && body.Data.Components != nil {
		rows, ok := parseComponents(body.Data.Components)
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: components", "code": 50035})
			return
		}
		s.setComponentsLocked(oi.message, rows)
	}
	oi.acked = true
	s.inter.replies = append(s.inter.replies, rep)
	s.notifyLocked()
	w.WriteHeader(http.StatusNoContent)
}

// webhookTarget finds the open interaction of a webhook request, or
// answers the error Discord would.
func (s *Server) webhookTargetLocked(w http.ResponseWriter, r *http.Request) (*openInteraction, bool) {
	oi := s.inter.open[r.PathValue("token")]
	switch {
	case r.PathValue("app") != s.appID() || oi == nil || oi.expired:
		webhookErr(w, http.StatusUnauthorized)
		return nil, false
	case !oi.acked:
		webhookErr(w, http.StatusNotFound)
		return nil, false
	}
	return oi, true
}

func decodeWebhook(w http.ResponseWriter, r *http.Request) (content string, flags discordgo.MessageFlags, ok bool) {
	var body struct {
		Content string                 `json:"content"`
		Flags   discordgo.MessageFlags `json:"flags"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Content == "" || len([]rune(body.Content)) > 2000 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: content", "code": 50035})
		return "", 0, false
	}
	return body.Content, body.Flags, true
}

func (s *Server) serveWebhookEdit(w http.ResponseWriter, r *http.Request) {
	content, _, ok := decodeWebhook(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	oi, ok := s.webhookTargetLocked(w, r)
	if !ok {
		return
	}
	if r.PathValue("msg") != "@original" {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	s.inter.replies = append(s.inter.replies, InteractionReply{Kind: ReplyEdit, InteractionID: oi.id, Content: content})
	s.notifyLocked()
	writeJSON(w, http.StatusOK, s.webhookMessage(content))
}

func (s *Server) serveFollowup(w http.ResponseWriter, r *http.Request) {
	content, flags, ok := decodeWebhook(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rl, ok := takeLimitLocked(&s.followupLimits); ok {
		s.writeRateLimitLocked(w, rl)
		return
	}
	oi, ok := s.webhookTargetLocked(w, r)
	if !ok {
		return
	}
	s.inter.replies = append(s.inter.replies, InteractionReply{Kind: ReplyFollowup, InteractionID: oi.id, Content: content, Flags: flags})
	s.notifyLocked()
	writeJSON(w, http.StatusOK, s.webhookMessage(content))
}

// webhookMessage is the message object a webhook call answers with; s.mu is held.
func (s *Server) webhookMessage(content string) *discordgo.Message {
	return &discordgo.Message{ID: s.newIDLocked(), Content: content, Author: s.opts.BotUser,
		Timestamp: time.Now().UTC()}
}

// SlashCommand builds an application command interaction from user in
// channelID (a guild channel or thread the fake knows, or a DM channel);
// options are the command's option values by name. In a guild the member
// carries their roles (SetMember) and, when the fake knows the guild, their
// permissions in the channel, as Discord sends them.
func (s *Server) SlashCommand(channelID string, user *discordgo.User, name string, options map[string]any) *discordgo.Interaction {
	data := discordgo.ApplicationCommandInteractionData{Name: name, CommandType: discordgo.ChatApplicationCommand}
	for k, v := range options {
		data.Options = append(data.Options, &discordgo.ApplicationCommandInteractionDataOption{
			Name: k, Type: discordgo.ApplicationCommandOptionString, Value: v})
	}
	i := &discordgo.Interaction{Type: discordgo.InteractionApplicationCommand, ChannelID: channelID, Data: data}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[channelID]; ok {
		i.GuildID = c.GuildID
	}
	if i.GuildID != "" {
		i.Member = s.slashMemberLocked(i.GuildID, channelID, user)
	} else {
		i.User = user
	}
	return i
}

// SendInteraction dispatches INTERACTION_CREATE for i, filling its id,
// application id, token and version, and returns the id. Until the bot
// acknowledges it, only the callback endpoint accepts it.
func (s *Server) SendInteraction(i *discordgo.Interaction) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i.ID == "" {
		i.ID = s.newIDLocked()
	}
	i.AppID, i.Version = s.appID(), 1
	if i.Token == "" {
		i.Token = "itok-" + i.ID
	}
	if s.inter.open == nil {
		s.inter.open = map[string]*openInteraction{}
	}
	s.inter.open[i.Token] = &openInteraction{id: i.ID}
	if i.Type == discordgo.InteractionMessageComponent && i.Message != nil {
		s.inter.open[i.Token].message = i.Message.ID
	}
	s.dispatchLocked("INTERACTION_CREATE", withMessageComponents(i))
	s.notifyLocked()
	return i.ID
}

// ExpireInteraction makes interaction id's token invalid, as Discord does
// 15 minutes after the interaction.
func (s *Server) ExpireInteraction(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, oi := range s.inter.open {
		if oi.id == id {
			oi.expired = true
		}
	}
}

// RefuseRegistrations makes the next n command overwrites fail with 403
// Missing Access (a guild that did not grant the applications.commands
// scope); they are recorded apart (Refused) and change nothing.
func (s *Server) RefuseRegistrations(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inter.refuse = n
}

// WaitRefused waits until at least n overwrites were refused and returns them.
func (s *Server) WaitRefused(ctx context.Context, n int) ([]Registration, error) {
	err := s.wait(ctx, func() bool { return len(s.inter.refused) >= n })
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Registration(nil), s.inter.refused...), err
}

// Registrations returns the application command overwrites so far.
func (s *Server) Registrations() []Registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Registration(nil), s.inter.registrations...)
}

// WaitRegistrations waits until at least n overwrites were made.
func (s *Server) WaitRegistrations(ctx context.Context, n int) ([]Registration, error) {
	err := s.wait(ctx, func() bool { return len(s.inter.registrations) >= n })
	return s.Registrations(), err
}

// InteractionReplies returns every answer to interactions so far, in order.
func (s *Server) InteractionReplies() []InteractionReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]InteractionReply(nil), s.inter.replies...)
}

// WaitInteractionReplies waits until at least n answers were given and
// returns them all.
func (s *Server) WaitInteractionReplies(ctx context.Context, n int) ([]InteractionReply, error) {
	err := s.wait(ctx, func() bool { return len(s.inter.replies) >= n })
	return s.InteractionReplies(), err
}
