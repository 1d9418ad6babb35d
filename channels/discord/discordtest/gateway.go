package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Gateway opcodes the fake speaks.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// CloseAuthFailed is the close code for a bad token.
const CloseAuthFailed = 4004

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  *string         `json:"t"`
}

func encode(op int, t string, seq int64, d any) []byte {
	raw, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("discordtest: encode %s: %v", t, err))
	}
	f := frame{Op: op, D: raw}
	if op == opDispatch {
		f.S, f.T = &seq, &t
	}
	b, _ := json.Marshal(f)
	return b
}

func (c *conn) writeRaw(b []byte) error {
	c.wm.Lock()
	defer c.wm.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		_ = ws.Close()
		s.mu.Lock()
		delete(s.conns, c)
		if s.current == c {
			s.current = nil
		}
		s.notifyLocked()
		s.mu.Unlock()
	}()
	hello := map[string]any{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()}
	if err := c.writeRaw(encode(opHello, "", 0, hello)); err != nil {
		return
	}
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var f frame
		if err := json.Unmarshal(msg, &f); err != nil {
			_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4002, "Decode error"))
			return
		}
		switch f.Op {
		case opHeartbeat:
			if err := c.writeRaw(encode(opHeartbeatACK, "", 0, nil)); err != nil {
				return
			}
		case opIdentify:
			if !s.identify(c, f.D) {
				return
			}
		case opResume:
			s.resume(c, f.D)
		}
	}
}

func (s *Server) tokenOK(tok string) bool {
	return tok == "Bot "+s.opts.Token || tok == s.opts.Token
}

// identify starts a new session on c: READY, then one GUILD_CREATE per guild.
func (s *Server) identify(c *conn, d json.RawMessage) bool {
	var id struct {
		Token   string           `json:"token"`
		Intents discordgo.Intent `json:"intents"`
	}
	if err := json.Unmarshal(d, &id); err != nil || !s.tokenOK(id.Token) {
		c.wm.Lock()
		_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(CloseAuthFailed, "Authentication failed."))
		c.wm.Unlock()
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions++
	s.sessionID = "session-" + strconv.Itoa(s.sessions)
	s.seq, s.events, s.intents = 0, nil, id.Intents
	s.current = c
	unavailable := make([]map[string]any, 0, len(s.opts.Guilds))
	for _, g := range s.opts.Guilds {
		unavailable = append(unavailable, map[string]any{"id": g.ID, "unavailable": true})
	}
	s.dispatchLocked("READY", map[string]any{"v": 9, "session_id": s.sessionID, "user": s.opts.BotUser,
		"guilds": unavailable, "resume_gateway_url": s.GatewayURL(),
		"application": map[string]any{"id": s.appID(), "flags": 0}})
	for _, g := range s.opts.Guilds {
		gc := s.guildNowLocked(g)
		gc.Members = append(append([]*discordgo.Member(nil), g.Members...),
			&discordgo.Member{User: s.opts.BotUser, Roles: s.opts.BotRoles, GuildID: g.ID})
		s.dispatchLocked("GUILD_CREATE", gc)
	}
	s.notifyLocked()
	return true
}

// guildNowLocked is g as GUILD_CREATE shows it now: its channels and
// active threads as they are (created by CHANNEL_CREATE or THREAD_CREATE
// since, deleted ones gone; not those only AddChannel made known), each
// with the id of its newest message (last_message_id). s.mu is held.
func (s *Server) guildNowLocked(g *discordgo.Guild) *discordgo.Guild {
	gc := *g
	gc.Channels, gc.Threads = nil, nil
	ids := slices.Sorted(maps.Keys(s.channels))
	for _, id := range ids {
		c := s.channels[id]
		if c.GuildID != g.ID || s.hidden[id] {
			continue
		}
		cc := *c
		for _, m := range s.history[id] {
			if snowflakeCmp(m.ID, cc.LastMessageID) > 0 {
				cc.LastMessageID = m.ID
			}
		}
		if cc.IsThread() {
			gc.Threads = append(gc.Threads, &cc)
		} else {
			gc.Channels = append(gc.Channels, &cc)
		}
	}
	return &gc
}

// resume replays the dispatches after the client's sequence number, then
// RESUMED; an unknown session gets op 9 (not resumable).
func (s *Server) resume(c *conn, d json.RawMessage) {
	var p struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := json.Unmarshal(d, &p); err != nil || !s.tokenOK(p.Token) || p.SessionID != s.sessionID || p.Seq > s.seq {
		_ = c.writeRaw(encode(opInvalidSession, "", 0, false))
		return
	}
	for _, e := range s.events {
		if e.seq > p.Seq {
			if err := c.writeRaw(e.raw); err != nil {
				return
			}
		}
	}
	s.current = c
	s.resumes++
	s.dispatchLocked("RESUMED", map[string]any{})
	s.notifyLocked()
}

// dispatchLocked numbers an event, keeps it for replay and sends it to the
// live connection, if any. s.mu is held.
func (s *Server) dispatchLocked(t string, d any) {
	s.seq++
	raw := encode(opDispatch, t, s.seq, d)
	s.events = append(s.events, dispatch{seq: s.seq, raw: raw})
	if s.current != nil {
		if err := s.current.writeRaw(raw); err != nil {
			s.current = nil
		}
	}
}

// Dispatch sends any event (e.g. THREAD_CREATE) and returns its sequence
// number. While no connection is live it is kept for the resume.
func (s *Server) Dispatch(t string, d any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t == "THREAD_CREATE" || t == "CHANNEL_CREATE" {
		if ch, ok := d.(*discordgo.Channel); ok {
			s.channels[ch.ID] = ch
		}
	}
	s.dispatchLocked(t, d)
	s.notifyLocked()
	return s.seq
}

// SendMessageCreate dispatches MESSAGE_CREATE for m, filling ID and
// Timestamp when empty, and returns the message id.
func (s *Server) SendMessageCreate(m *discordgo.Message) string {
	id, _ := s.SendMessageCreateLive(m)
	return id
}

// SendMessageCreateLive is SendMessageCreate, also telling where the event
// went: session is the number (1, 2, ... in Identify order) of the gateway
// session whose live connection it was written to, 0 when no connection
// was live (or the write failed). Discord does not queue events for a bot
// that is down: an event sent while no connection is live only reaches a
// session that resumes, never one a restarted process identifies afresh.
// A write that succeeded can still be unread when the client dies.
func (s *Server) SendMessageCreateLive(m *discordgo.Message) (id string, session int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID == "" {
		m.ID = s.newIDLocked()
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now().UTC()
	}
	if m.GuildID == "" {
		if ch, ok := s.channels[m.ChannelID]; ok {
			m.GuildID = ch.GuildID
		} else if m.ChannelID != "" {
			// A channel of no guild: the DM channel with the author,
			// which GET /channels/{id} knows from now on, as Discord's.
			dm := &discordgo.Channel{ID: m.ChannelID, Type: discordgo.ChannelTypeDM}
			if m.Author != nil {
				dm.Recipients = []*discordgo.User{m.Author}
			}
			s.channels[m.ChannelID] = dm
		}
	}
	s.keepLocked(m)
	s.dispatchLocked("MESSAGE_CREATE", m)
	s.notifyLocked()
	if s.current == nil {
		return m.ID, 0
	}
	return m.ID, s.sessions
}

// WaitDisconnected waits until no gateway connection is open (a killed
// client's connections are closed once the fake reads their end).
func (s *Server) WaitDisconnected(ctx context.Context) error {
	return s.wait(ctx, func() bool { return len(s.conns) == 0 && s.current == nil })
}

// Reconnect sends op 7 on the live connection: the client must close it
// and resume on a new one. Until it does, dispatches are kept for replay.
func (s *Server) Reconnect() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.current
	if c == nil {
		return errClosed
	}
	s.current = nil
	s.notifyLocked()
	return c.writeRaw(encode(opReconnect, "", 0, nil))
}

// Drop closes the live connection abruptly, like a network failure.
func (s *Server) Drop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.current
	if c == nil {
		return errClosed
	}
	s.current = nil
	s.notifyLocked()
	return c.ws.Close()
}

// InvalidateSession makes the current gateway session not resumable (as
// when Discord dropped it): a client's next Resume gets op 9 and must
// identify afresh, and the events since are not replayed.
func (s *Server) InvalidateSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionID += "-invalidated"
	s.events = nil
}
