// Package discordtest is a fake Discord for tests: a websocket gateway
// that speaks the real protocol (Hello, Identify, Resume, READY,
// GUILD_CREATE, heartbeats and ACKs, op 7 reconnect, dispatches with
// sequence numbers and replay on resume) and the REST endpoints a bot
// uses (gateway discovery, channel messages and their history, typing,
// channel, guild and member lookup: SetGuild, SetMember), plus
// slash commands: application command registration, INTERACTION_CREATE
// (SendInteraction), the interaction callback and the interaction
// webhook's edit of @original and followups, all recorded with their flags.
//
// Point discordgo at it with Server.Client (an *http.Client that sends
// every request to the fake, whatever its host); the gateway URL the fake
// advertises is a plain ws:// URL on the same listener.
//
// A Server is safe for concurrent use. Close it when done: it closes open
// gateway connections and the listener, and every goroutine it started ends.
package discordtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Options configures a Server.
type Options struct {
	// Token is the bot token the fake accepts, without "Bot ".
	Token string
	// BotUser is the bot's user (id "1000" and name "gatewaybot" when nil).
	BotUser *discordgo.User
	// BotRoles are the role ids of the bot's member in every guild.
	BotRoles []string
	// Guilds are sent as GUILD_CREATE after READY, with their Channels and
	// Threads.
	Guilds []*discordgo.Guild
	// UploadLimits are the largest attachment by boost tier 0–3, in bytes
	// (zero: DefaultUploadLimits; uploads.go).
	UploadLimits [4]int64
	// HeartbeatInterval is sent in Hello (45 s when zero).
	HeartbeatInterval time.Duration
	// NoEcho disables dispatching the bot's own sent messages back as
	// MESSAGE_CREATE (real Discord echoes them).
	NoEcho bool
	// ApplicationID is the bot's application, announced in READY
	// (DefaultApplicationID when empty).
	ApplicationID string
	// NonceWindow is how long a message post's nonce is remembered for
	// enforce_nonce (nonce.go; DefaultNonceWindow when zero).
	NonceWindow time.Duration
	// OnPost, if set, is called with each message post the fake created,
	// before it answers (a crash test kills the bot there: the message
	// exists, the bot never hears so).
	OnPost func(Sent)
}

// Sent is one message the bot posted.
type Sent struct {
	ChannelID string
	Content   string
	// Reference is the message the post replies to, if any.
	Reference *discordgo.MessageReference
	// AllowedMentions is what the bot allowed to ping.
	AllowedMentions *discordgo.MessageAllowedMentions
	MessageID       string
	// Nonce is the post's nonce ("" without one), enforced or not.
	Nonce string
	// Files are the post's attachments (uploads.go).
	Files []Upload `json:",omitempty"`
}

// Server is a fake Discord. Create it with New.
type Server struct {
	opts   Options
	srv    *httptest.Server
	client *http.Client
	up     websocket.Upgrader

	mu             sync.Mutex
	changed        chan struct{}      // closed and replaced on every state change
	seq            int64              // last dispatched sequence number
	events         []dispatch         // every dispatch of the current session, for resume
	sessionID      string             // current gateway session
	sessions       int                // sessions started (READY)
	resumes        int                // successful resumes (RESUMED)
	current        *conn              // connection dispatches go to; nil while disconnected
	conns          map[*conn]struct{} // every open connection
	intents        discordgo.Intent   // from the last Identify
	channels       map[string]*discordgo.Channel
	sent           []Sent
	inter          interactionsFake
	comps          componentsFake // buttons (components.go)
	typing         []string
	reactions      []Reaction
	nextID         int64              // the last id given (newIDLocked)
	hidden         map[string]bool    // channels AddChannel made known to REST only
	postLimits     []rateLimit        // next message POSTs to answer with 429 (ratelimit.go)
	limited        int                // requests answered with 429
	followupLimits []rateLimit        // next interaction followups to answer with 429
	typingLimits   []rateLimit        // next typing triggers to answer with 429
	refused        map[string]refusal // channels that refuse the bot (refuse.go)
	// channelFailures is how many next channel lookups (GET
	// /channels/{id}) fail with 500 (FailChannelLookups).
	channelFailures int
	refusals        int // requests they refused
	nonces          nonceBook
	threads         []StartedThread

	files      fileStore // attachments served as the CDN (files.go)
	edits      []Edit
	editLimits []rateLimit // next message PATCHes to answer with 429
	deleted    []Deleted

	history      map[string][]*discordgo.Message // by channel (history.go)
	historyReads int

	guilds        map[string]*discordgo.Guild             // GET /guilds/{id} (members.go)
	members       map[string]map[string]*discordgo.Member // by guild, then user id
	memberLookups int
	guildLookups  int
}

type dispatch struct {
	seq int64
	raw []byte
}

type conn struct {
	ws *websocket.Conn
	wm sync.Mutex // serialises writes
}

// New starts a fake Discord.
func New(opts Options) *Server {
	if opts.BotUser == nil {
		opts.BotUser = &discordgo.User{ID: "1000", Username: "gatewaybot", Bot: true}
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 45 * time.Second
	}
	s := &Server{opts: opts, changed: make(chan struct{}), conns: map[*conn]struct{}{},
		channels: map[string]*discordgo.Channel{}, hidden: map[string]bool{},
		guilds: map[string]*discordgo.Guild{}, members: map[string]map[string]*discordgo.Member{}}
	for _, g := range opts.Guilds {
		s.guilds[g.ID] = g
		for _, c := range g.Channels {
			c.GuildID = g.ID
			s.channels[c.ID] = c
		}
		for _, c := range g.Threads {
			c.GuildID = g.ID
			s.channels[c.ID] = c
		}
	}
	mux := http.NewServeMux()
	s.interactionRoutes(mux)
	mux.HandleFunc("GET /gateway/", s.serveGateway) // discordgo adds the slash
	mux.HandleFunc("GET /api/v9/gateway", s.serveGatewayURL)
	mux.HandleFunc("GET /api/v9/gateway/bot", s.serveGatewayURL)
	s.handleReactions(mux)
	mux.HandleFunc("GET /api/v9/channels/{id}", s.auth(s.serveChannel))
	mux.HandleFunc("GET /api/v9/guilds/{id}", s.auth(s.serveGuild))
	mux.HandleFunc("GET /api/v9/guilds/{id}/members/{uid}", s.auth(s.serveMember))
	mux.HandleFunc("POST /api/v9/channels/{id}/messages", s.auth(s.usable(s.serveMessage)))
	mux.HandleFunc("POST /api/v9/channels/{id}/typing", s.auth(s.usable(s.serveTyping)))
	mux.HandleFunc("POST /api/v9/channels/{id}/messages/{mid}/threads", s.auth(s.usable(s.serveStartThread)))
	mux.HandleFunc("GET /attachments/{ch}/{id}/{name}", s.serveAttachment)
	mux.HandleFunc("PATCH /api/v9/channels/{id}/messages/{mid}", s.auth(s.usable(s.serveEdit)))
	mux.HandleFunc("DELETE /api/v9/channels/{id}/messages/{mid}", s.auth(s.usable(s.serveDelete)))
	s.historyRoutes(mux)
	s.srv = httptest.NewServer(mux)
	target, _ := url.Parse(s.srv.URL)
	s.client = &http.Client{Transport: &rewrite{host: target.Host, base: &http.Transport{}}}
	return s
}

// rewrite sends every request to the fake server.
type rewrite struct {
	host string
	base *http.Transport
}

func (r *rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = "http", r.host, r.host
	return r.base.RoundTrip(req)
}

// Client returns an HTTP client that sends discord.com requests to the
// fake; assign it to discordgo.Session.Client.
func (s *Server) Client() *http.Client { return s.client }

// URL is the fake's HTTP origin (an account's apiBase in end-to-end tests).
func (s *Server) URL() string { return s.srv.URL }

// GatewayURL is the websocket URL the fake advertises.
func (s *Server) GatewayURL() string { return "ws" + s.srv.URL[len("http"):] + "/gateway" }

// BotUser is the bot's user.
func (s *Server) BotUser() *discordgo.User { return s.opts.BotUser }

// Close closes every gateway connection and the server.
func (s *Server) Close() {
	s.mu.Lock()
	for c := range s.conns {
		_ = c.ws.Close()
	}
	s.current = nil
	s.mu.Unlock()
	s.srv.Close()
	s.client.Transport.(*rewrite).base.CloseIdleConnections()
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait blocks until cond (called with s.mu held) is true or ctx ends.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("discordtest: wait: %w", ctx.Err())
		}
	}
}

func (s *Server) serveGatewayURL(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.GatewayURL(), "shards": 1,
		"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}})
}

func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bot "+s.opts.Token {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
			return
		}
		next(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serveChannel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c, ok := s.channels[r.PathValue("id")]
	failing := s.channelFailures > 0
	if failing {
		s.channelFailures--
	}
	s.mu.Unlock()
	if failing {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "500: Internal Server Error", "code": 0})
		return
	}
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": 10003})
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) serveTyping(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if rl, ok := takeLimitLocked(&s.typingLimits); ok {
		s.writeRateLimitLocked(w, rl)
		s.mu.Unlock()
		return
	}
	s.typing = append(s.typing, r.PathValue("id"))
	s.notifyLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) serveMessage(w http.ResponseWriter, r *http.Request) {
	body, files, status, fail := s.readMessageBody(r)
	if fail != nil {
		writeJSON(w, status, fail)
		return
	}
	if (body.Content == "" && len(files) == 0) || len([]rune(body.Content)) > 2000 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: content", "code": 50035})
		return
	}
	nonce, err := body.nonce()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: nonce: " + err.Error(), "code": 50035})
		return
	}
	s.mu.Lock()
	if rl, ok := takeLimitLocked(&s.postLimits); ok {
		s.writeRateLimitLocked(w, rl)
		s.mu.Unlock()
		return
	}
	if body.EnforceNonce && nonce != "" {
		if first := s.nonces.seen(nonce, s.nonceWindow()); first != nil {
			s.nonces.repeats++
			s.notifyLocked()
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, first)
			return
		}
	}
	rows, ok := parseComponents(body.Components)
	if !ok {
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: components", "code": 50035})
		return
	}
	channelID := r.PathValue("id")
	id := s.newIDLocked()
	msg := &discordgo.Message{ID: id, ChannelID: channelID, Content: body.Content, Author: s.opts.BotUser,
		Timestamp: time.Now().UTC(), MessageReference: body.Reference, Components: asComponents(rows),
		Attachments: s.attachmentsOf(channelID, files)}
	s.setComponentsLocked(id, rows)
	if c, ok := s.channels[channelID]; ok {
		msg.GuildID = c.GuildID
	}
	s.keepLocked(msg)
	s.sent = append(s.sent, Sent{ChannelID: channelID, Content: body.Content, Reference: body.Reference,
		AllowedMentions: body.AllowedMentions, MessageID: id, Nonce: nonce, Files: files})
	if nonce != "" {
		s.nonces.note(nonce, msg)
	}
	if !s.opts.NoEcho {
		s.dispatchLocked("MESSAGE_CREATE", msg)
	}
	lost, lostStatus := s.nonces.loseAnswer(), s.nonces.loseStatus
	created := s.sent[len(s.sent)-1]
	s.notifyLocked()
	s.mu.Unlock()
	if s.opts.OnPost != nil {
		s.opts.OnPost(created)
	}
	if lost {
		// The message exists; the answer saying so is lost on the way.
		if lostStatus == 0 {
			lostStatus = http.StatusInternalServerError
		}
		writeJSON(w, lostStatus, map[string]any{"message": http.StatusText(lostStatus), "code": 0})
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

// FailChannelLookups makes the next n channel lookups (GET
// /channels/{id}) fail with 500, as Discord does in an outage.
func (s *Server) FailChannelLookups(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channelFailures = n
}

// AddChannel makes a channel (or thread) known to GET /channels/{id}
// without announcing it on the gateway.
func (s *Server) AddChannel(c *discordgo.Channel) {
	s.mu.Lock()
	s.channels[c.ID] = c
	s.hidden[c.ID] = true
	s.mu.Unlock()
}

// discordEpoch is the first millisecond of 2015 (Unix ms), where
// snowflakes count from.
const discordEpoch = 1420070400000

// newIDLocked is a new id: a snowflake of the current time, as Discord's
// are (their creation time is in their top bits), above every id given
// before. s.mu is held.
func (s *Server) newIDLocked() string {
	s.nextID = max(s.nextID+1, (time.Now().UnixMilli()-discordEpoch)<<22)
	return strconv.FormatInt(s.nextID, 10)
}

// Sent returns the messages posted so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// WaitSent waits until at least n messages were posted and returns them.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	if err := s.wait(ctx, func() bool { return len(s.sent) >= n }); err != nil {
		return s.Sent(), err
	}
	return s.Sent(), nil
}

// Typing returns the channel ids typing was triggered in.
func (s *Server) Typing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.typing...)
}

// WaitReady waits until n gateway sessions were established (READY) and
// r resumes completed (RESUMED), and a connection is live.
func (s *Server) WaitReady(ctx context.Context, n, r int) error {
	return s.wait(ctx, func() bool { return s.sessions >= n && s.resumes >= r && s.current != nil })
}

// Sessions returns how many sessions were identified and resumed.
func (s *Server) Sessions() (identified, resumed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions, s.resumes
}

// Intents returns the intents of the last Identify.
func (s *Server) Intents() discordgo.Intent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.intents
}

// errClosed reports a dispatch to a connection that is gone.
var errClosed = errors.New("discordtest: no live connection")
