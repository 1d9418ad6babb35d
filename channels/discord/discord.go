package discord

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Name is the channel name of this adapter.
const Name = "discord"

// Intents are the gateway intents the adapter asks for. Message content is
// a privileged intent: enable it for the bot in the developer portal.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentMessageContent |
	discordgo.IntentsGuildMessageReactions | discordgo.IntentsDirectMessageReactions

// Options configures an Adapter.
type Options struct {
	Logger *zap.Logger
	// HTTPClient carries REST calls (gateway discovery included); nil keeps
	// discordgo's client (20 s timeout). Tests pass discordtest's client.
	HTTPClient *http.Client
	// MentionRequired decides whether a guild message needs a mention (the
	// account's requireMention and its guild, channel and thread rules);
	// nil: every guild message does. The daemon passes the answer of the
	// access policy in force, so a hot reload changes it.
	MentionRequired func(channels.Inbound) bool
	// SlashAllowed reports whether the access rules in force admit a
	// mentioned message in the room of in (a guild channel or thread, no
	// sender: a room that admits only listed senders counts): in guild
	// mode the command catalogue is registered in each guild with such a
	// room. nil admits no guild. The daemon answers from its policy; call
	// ResyncSlash when its rules change.
	SlashAllowed func(in channels.Inbound) bool
	// Room returns the room settings in force (hot-reloaded) for a
	// message; the adapter reads autoThread from it. nil: no auto threads.
	Room func(channels.Inbound) channels.Room
	// MaxRetryAfter is the longest 429 retry_after a message post waits
	// out before it returns the rate limit (ratelimit.go; one minute when
	// zero).
	MaxRetryAfter time.Duration
	// OpenTimeout bounds one gateway connect (30 s when zero).
	OpenTimeout time.Duration
	// MaxBackoff caps the wait between failed connects (2 min when zero).
	MaxBackoff time.Duration
	// Commands is the command catalogue registered as slash commands and
	// accepted from interactions; nil means channels.Commands().
	Commands []channels.Command
	// Cursors keeps the newest message seen per channel, so that each
	// connect catches up on what was said while the bot was down
	// (catchup.go); nil: no catch-up.
	Cursors CursorStore
	// Choices verifies presses of choice buttons (choices.go); nil: every
	// press is answered as invalid.
	Choices *channels.ChoiceKeys
	// CatchUpMaxAge: older messages are not caught up, nor are channels
	// quiet for longer read at a connect unless their guild's GUILD_CREATE
	// shows newer messages (catchup_guild.go) (24 h when zero).
	CatchUpMaxAge time.Duration
	// CatchUpMaxMessages caps the messages caught up per channel and
	// connect (500 when zero).
	CatchUpMaxMessages int
	// CatchUpMaxChannels caps the channels read per connect, the most
	// recently active first (200 when zero).
	CatchUpMaxChannels int
}

// Adapter is one Discord bot account. Create it with New.
type Adapter struct {
	id   string
	cfg  Config
	opts Options
	log  *zap.Logger
	s    *discordgo.Session

	mention func(channels.Inbound) bool
	running atomic.Bool
	// disconnects counts discordgo's Disconnect events (awaitHeartbeat).
	disconnects atomic.Int64

	mu      sync.Mutex
	botID   string  // guarded by mu; from READY
	botName string  // guarded by mu; from READY
	lastNet *gwConn // guarded by mu; the gateway's current TCP connection
	// starting are the guilds READY announced whose GUILD_CREATE is to
	// come (catchup_guild.go); guarded by mu.
	starting map[string]bool
	plan     catchUpPlan // what the last connect's catch-up left; Run's goroutine only

	ix     interactions         // slash command acknowledgements (own lock)
	admins channels.AdminCache  // IsAdmin's answers (admin.go)
	conn   channels.ConnTracker // connection state for `gateway status`
	seen   seenCursors          // newest message handled per channel (catchup.go)
	recent recentIDs            // messages handled lately; Run's goroutine only (recent.go)
	// heldEvery is how often held channels are read again (held.go).
	heldEvery time.Duration
	holds     holds // routes Discord rate limited (ratelimit.go)

	// resync tells the registration worker that the rules behind
	// Options.SlashAllowed changed (ResyncSlash; cap 1).
	resync chan struct{}
	// catalogue is the command catalogue in force (SetCommands replaces
	// it); recommand tells the registration worker to register it again
	// where this Run registered the old one (cap 1).
	catalogue atomic.Pointer[[]channels.Command]
	recommand chan struct{}
}

var (
	_ channels.Adapter      = (*Adapter)(nil)
	_ channels.ConnReporter = (*Adapter)(nil)
	_ channels.Typer        = (*Adapter)(nil)
	_ channels.Notifier     = (*Adapter)(nil)
)

// New validates cfg and returns an adapter for account accountID. It does
// not connect; Run does.
func New(accountID string, cfg Config, opts Options) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	tok, err := cfg.token()
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = 30 * time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 2 * time.Minute
	}
	if !strings.HasPrefix(tok, "Bot ") {
		tok = "Bot " + tok
	}
	s, err := discordgo.New(tok)
	if err != nil {
		return nil, fmt.Errorf("discord: new session: %w", err)
	}
	a := &Adapter{id: accountID, cfg: cfg, opts: opts, s: s, resync: make(chan struct{}, 1), recommand: make(chan struct{}, 1), heldEvery: heldRetryEvery,
		seen: seenCursors{first: make(chan struct{}, 1)},
		log:  opts.Logger.With(zap.String("channel", Name), zap.String("account_id", accountID))}
	cmds := opts.Commands
	if cmds == nil {
		cmds = channels.Commands()
	}
	a.catalogue.Store(&cmds)
	// Run owns reconnection (discordgo's loop cannot be stopped and leaks).
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	s.ShouldRetryOnRateLimit = true
	// Handlers run on discordgo's read goroutine, in gateway order; ours
	// only queue events.
	s.SyncEvents = true
	// discordgo logs through the standard logger; errors reach us anyway.
	s.LogLevel = -1
	s.Identify.Intents = Intents
	s.State.TrackPresences = false
	s.State.TrackVoice = false
	s.State.TrackEmojis = false
	s.State.TrackStickers = false
	s.State.MaxMessageCount = 0
	switch {
	case opts.HTTPClient != nil:
		s.Client = opts.HTTPClient
	case cfg.APIBase != "":
		base, _ := url.Parse(cfg.APIBase) // checked by Validate
		s.Client = &http.Client{Timeout: 20 * time.Second, Transport: &endpointRewrite{base: base, next: http.DefaultTransport}}
	}
	s.Client = limitedClient(s.Client, &a.holds)
	s.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: opts.OpenTimeout,
		NetDialContext: a.dial}
	a.mention = opts.MentionRequired
	if a.mention == nil {
		a.mention = func(channels.Inbound) bool { return true }
	}
	return a, nil
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// AccountID implements channels.Adapter.
func (a *Adapter) AccountID() string { return a.id }

// Config returns the account's configuration.
func (a *Adapter) Config() Config { return a.cfg }

// dial connects the gateway's TCP connection with a deadline covering the
// handshake; connect clears it once the session is open, or moves it to
// now to abort a connect when Run's context ends.
func (a *Adapter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: a.opts.OpenTimeout, KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(a.opts.OpenTimeout))
	gc := &gwConn{Conn: c}
	a.mu.Lock()
	a.lastNet = gc
	a.mu.Unlock()
	return gc, nil
}

// gwConn is the gateway's TCP connection, counting the websocket text
// frames the client wrote on it (awaitHeartbeat).
type gwConn struct {
	net.Conn
	texts atomic.Int64
}

func (c *gwConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	// A client frame is written in one call (gorilla's frame header and
	// payload share a buffer); 0x81 is a final text frame's first byte.
	if err == nil && n == len(b) && len(b) > 0 && b[0] == 0x81 {
		c.texts.Add(1)
	}
	return n, err
}

// opened is a connection Open returned, kept until the next connect.
type opened struct {
	conn   *gwConn
	before int64 // disconnects before its Open
}

func (a *Adapter) setNetDeadline(t time.Time) {
	a.mu.Lock()
	c := a.lastNet
	a.mu.Unlock()
	if c != nil {
		_ = c.SetDeadline(t)
	}
}

func (a *Adapter) bot() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID
}

// Connection implements channels.ConnReporter: opening the gateway
// connection and its drops move it.
func (a *Adapter) Connection() channels.Connection { return a.conn.Connection() }

// Run connects to the gateway and hands every accepted message to h, one at
// a time, until ctx ends; then it closes the session and returns nil. It
// returns an error only for a failure retrying cannot fix (bad token,
// disallowed intents). Run must not be called twice at once.
func (a *Adapter) Run(ctx context.Context, h channels.Handler) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("discord: Run already running")
	}
	defer a.running.Store(false)
	defer a.startInteractions(ctx, h)()
	a.conn.SetMode("gateway")

	q := newQueue(maxQueued)
	disconnected := make(chan struct{}, 1)
	removes := []func(){
		a.s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
			if r.User != nil {
				a.mu.Lock()
				a.botID, a.botName = r.User.ID, r.User.Username
				a.mu.Unlock()
			}
			a.startGuilds(r)
		}),
		a.s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) {
			if g.Guild != nil && a.takeStartGuild(g.ID) && !q.push(&guildStart{id: g.ID}) {
				a.log.Warn("inbound queue full, guild not caught up", zap.String("guild_id", g.ID))
			}
		}),
		a.s.AddHandler(a.onRawEvent(q)),
		a.s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageUpdate) {
			if !q.push(m) {
				a.log.Warn("inbound queue full, edit dropped", zap.String("message_id", m.ID))
			}
		}),
		a.s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
			if !q.push(m) {
				a.log.Warn("inbound queue full, message dropped", zap.String("message_id", m.ID))
			}
		}),
		a.s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
			a.disconnects.Add(1)
			if ctx.Err() == nil {
				a.conn.Failed(errors.New("discord: gateway connection closed"))
			}
			select {
			case disconnected <- struct{}{}:
			default:
			}
		}),
		a.s.AddHandler(func(_ *discordgo.Session, rl *discordgo.RateLimit) {
			a.log.Info("rate limited", zap.String("url", rl.URL), zap.Duration("retry_after", rl.RetryAfter))
		}),
	}
	defer func() {
		// Close sleeps a second waiting for the close handshake.
		if err := a.s.Close(); err != nil {
			a.log.Debug("close gateway", zap.Error(err))
		}
		for _, rm := range removes {
			rm()
		}
	}()

	if a.opts.Cursors != nil {
		// The cursor writer lives as long as Run: stopped and waited for
		// (with its last write) before Run returns, after the loop below
		// (whose goroutine notes the cursors) is done, not when ctx ends:
		// a note made after ctx ended would miss the last write.
		fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() { defer close(done); a.flushCursors(fctx) }()
		defer func() { stop(); <-done }()
	}
	var last opened
	if err := a.connect(ctx, &last); err != nil || ctx.Err() != nil {
		return err
	}
	a.catchUp(ctx, h)
	retry := time.NewTicker(a.heldEvery)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-retry.C:
			a.retryHeld(ctx, h)
		case <-q.ready():
			for _, m := range q.take() {
				a.handleQueued(ctx, h, m)
			}
		case <-disconnected:
			if ctx.Err() != nil {
				return nil
			}
			a.log.Info("gateway disconnected, resuming")
			if err := a.connect(ctx, &last); err != nil || ctx.Err() != nil {
				return err
			}
			a.catchUp(ctx, h)
		}
	}
}

// connect opens (or resumes) the gateway session, retrying with backoff
// until it succeeds, ctx ends (nil) or the failure is permanent. last is
// the connection the previous connect opened; it is replaced by this one's.
func (a *Adapter) connect(ctx context.Context, last *opened) error {
	if last.conn != nil {
		a.awaitHeartbeat(ctx, *last)
	}
	backoff := time.Duration(0)
	for {
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		stop := context.AfterFunc(ctx, func() { a.setNetDeadline(time.Now()) })
		before := a.disconnects.Load()
		err := a.s.Open()
		stop()
		if err == nil {
			a.mu.Lock()
			*last = opened{conn: a.lastNet, before: before}
			a.mu.Unlock()
		}
		if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			a.setNetDeadline(time.Time{})
			if ctx.Err() == nil {
				a.conn.Connected()
				a.log.Info("gateway connected")
			}
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if permanent(err) {
			err = fmt.Errorf("discord: open gateway: %w", err)
			a.conn.Stopped(err)
			return err
		}
		a.conn.Failed(err)
		backoff = min(max(2*backoff, time.Second), a.opts.MaxBackoff)
		a.log.Warn("gateway connect failed", zap.Error(err), zap.Duration("retry_in", backoff))
	}
}

// awaitHeartbeat returns once the heartbeat goroutine of the connection
// last opened is past its first heartbeat, or when ctx ends; the next Open
// waits for it.
//
// discordgo v0.29's heartbeat goroutine sends its first heartbeat only when
// it is first scheduled, and when a send fails it calls s.Close(), which
// closes whatever connection is current then. If the connection ends before
// that first send (op 7 or a drop soon after Open, likely on a loaded
// machine), the send fails ("close sent") and, had the next Open already
// taken the session lock, closes the new connection: one more resume, and
// possibly a chain of them. The goroutine's first send either succeeds (the
// connection's second text frame: the first is Identify or Resume; then the
// goroutine ends quietly on the closed listening channel) or fails and
// closes the session (a second Disconnect since its Open: the first is the
// connection's own end). Both are waited for here; the cap (OpenTimeout)
// only guards against a discordgo upgrade changing this.
func (a *Adapter) awaitHeartbeat(ctx context.Context, last opened) {
	deadline := time.Now().Add(a.opts.OpenTimeout)
	for last.conn.texts.Load() < 2 && a.disconnects.Load() < last.before+2 && ctx.Err() == nil {
		if time.Now().After(deadline) {
			a.log.Warn("gateway heartbeat not seen; reconnecting anyway", zap.Duration("waited", a.opts.OpenTimeout))
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// permanent reports close codes that retrying will not fix.
func permanent(err error) bool {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Code {
	case 4004, 4010, 4011, 4012, 4013, 4014:
		return true
	}
	return false
}

// handle normalises one message and hands it to h, once however often
// it comes (recent.go). A handler error is retried a few times; a message
// still not taken for an outage (channels.ErrUnavailable) or a shutdown
// holds its channel's cursor so that it is read again from the history
// (held.go; held reports it); other failures give it up.
func (a *Adapter) handle(ctx context.Context, h channels.Handler, m *discordgo.MessageCreate) (held bool) {
	if m.Message == nil {
		return false
	}
	if a.recent.has(m.ID) { // a second copy (recent.go)
		a.seen.note(m.ChannelID, m.ID, time.Now())
		return false
	}
	in, ok, unplaced := a.inboundOf(ctx, m.Message, false)
	if unplaced {
		a.log.Warn("channel held at a message whose channel could not be looked up (a thread is judged by its parent's rules too): it is read again from the history",
			zap.String("chat_id", m.ChannelID), zap.String("message_id", m.ID), zap.Duration("retry_every", a.heldEvery))
		a.seen.hold(m.ChannelID, m.ID, time.Now())
		return true
	}
	if !ok {
		a.seen.note(m.ChannelID, m.ID, time.Now())
		a.recent.add(m.ID)
		return false
	}
	err := a.deliver(ctx, h, in)
	switch {
	case err == nil:
		a.seen.note(m.ChannelID, m.ID, time.Now()) // journaled (or refused): no catch-up needed
		a.recent.add(m.ID)
	case ctx.Err() != nil:
		a.seen.hold(m.ChannelID, m.ID, time.Now()) // the next start reads it again (held.go)
		return true
	case errors.Is(err, channels.ErrUnavailable):
		a.log.Warn("channel held at a message not accepted: it is read again from the history", zap.String("chat_id", m.ChannelID),
			zap.String("message_id", m.ID), zap.Duration("retry_every", a.heldEvery))
		a.seen.hold(m.ChannelID, m.ID, time.Now())
		return true
	default:
		// Not a passing outage: given up (logged by deliver), not retried
		// for ever.
		a.seen.note(m.ChannelID, m.ID, time.Now())
		a.recent.add(m.ID)
	}
	return false
}

// deliver hands in to h, retrying a failure twice; it returns nil when h
// took it (accepted or refused for good), else the last error (the
// context's when it ended).
func (a *Adapter) deliver(ctx context.Context, h channels.Handler, in channels.Inbound) error {
	delay := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := h(ctx, in)
		if err == nil || errors.Is(err, channels.ErrRejected) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt == 3 {
			a.log.Error("message not accepted", zap.String("chat_id", in.ChatID),
				zap.String("message_id", in.MessageID), zap.Error(err))
			return err
		}
		a.log.Warn("message not accepted, retrying", zap.String("message_id", in.MessageID), zap.Error(err))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay *= 2
	}
}

// endpointRewrite sends requests for discord.com to base (Config.APIBase),
// keeping their path below base's.
type endpointRewrite struct {
	base *url.URL
	next http.RoundTripper
}

func (r *endpointRewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != "discord.com" {
		return r.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = r.base.Scheme, r.base.Host, r.base.Host
	req.URL.Path = strings.TrimSuffix(r.base.Path, "/") + req.URL.Path
	return r.next.RoundTrip(req)
}
