package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/httpclient"
)

// Name is the channel name of this adapter.
const Name = "telegram"

// Default retry delays after errors (Options.Backoff, Options.MaxBackoff).
const (
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
)

// requestTimeout bounds every call except the long poll.
const requestTimeout = 30 * time.Second

// Options are the adapter's collaborators.
type Options struct {
	Logger *zap.Logger
	// HTTPClient carries every request; nil means a client without timeout
	// (each request gets a context deadline). Its Timeout, if any, must be
	// longer than the poll timeout.
	HTTPClient *http.Client
	// OffsetStore persists the polling offset; nil keeps it in memory.
	// If it also implements MigrationStore, group migrations persist too.
	OffsetStore OffsetStore
	// MentionRequired decides whether a group message needs a mention (the
	// account's requireMention and its group and topic rules); nil: every
	// group message does. The daemon passes the answer of the access policy
	// in force, so a hot reload changes it.
	MentionRequired func(channels.Inbound) bool
	// Backoff is the first delay after an error; it doubles up to MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxRetryAfter caps how long Send waits on a 429 before giving up
	// (default 60 s).
	MaxRetryAfter time.Duration
	// Commands is the command catalogue published as the bot's command
	// menu at start; nil means channels.Commands(), empty publishes none.
	Commands []channels.Command
	// Choices verifies presses of choice buttons (choices.go); nil: every
	// press is answered as invalid.
	Choices *channels.ChoiceKeys
}

// Adapter is one Telegram bot account. Create it with New.
type Adapter struct {
	account string
	cfg     Config
	opts    Options
	log     *zap.Logger
	client  *http.Client
	// bot is a template: every call copies it with a client bound to the
	// caller's context (MakeRequest itself takes no context).
	bot tgbotapi.BotAPI

	self    atomic.Pointer[botIdentity] // set by Run after getMe
	pastes  pasteFollow                 // fragments of an addressed paste (paste.go)
	albums  albumFollow                 // files of an addressed album (album.go)
	handler atomic.Pointer[channels.Handler]
	admins  channels.AdminCache  // IsAdmin's answers (admin.go)
	conn    channels.ConnTracker // connection state for `gateway status`
	sent    channels.SentLog     // where the bot's messages went (events.go)
	// menu is the command catalogue the menus offer (SetCommands replaces
	// it); menuChanged wakes the menu worker to publish it again (cap 1).
	menu        atomic.Pointer[[]channels.Command]
	menuChanged chan struct{}

	migMu sync.Mutex
	// toNew maps group ids migrated to supergroups (old → new); guarded
	// by migMu.
	toNew map[int64]int64
}

var (
	_ channels.Adapter      = (*Adapter)(nil)
	_ channels.ConnReporter = (*Adapter)(nil)
	_ channels.Typer        = (*Adapter)(nil)
	_ channels.Notifier     = (*Adapter)(nil)
)

// New returns an adapter for account accountID. It validates cfg and reads
// the token but makes no request; Run connects.
func New(accountID string, cfg Config, opts Options) (*Adapter, error) {
	if accountID == "" {
		return nil, errors.New("telegram: empty account id")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("telegram: config %w", err)
	}
	cfg = cfg.WithDefaults()
	token, err := cfg.ResolveToken()
	if err != nil {
		return nil, fmt.Errorf("telegram: config %w", err)
	}
	if cfg.Webhook.SecretToken, err = cfg.Webhook.ResolveSecret(); err != nil {
		return nil, fmt.Errorf("telegram: config %w", err)
	}
	cfg.Webhook.SecretTokenFile = ""
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = httpclient.New()
	}
	if opts.OffsetStore == nil {
		opts.OffsetStore = &MemoryOffsetStore{}
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff < opts.Backoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.Backoff)
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = time.Minute
	}
	a := &Adapter{
		account: accountID,
		cfg:     cfg,
		opts:    opts,
		log:     opts.Logger.With(zap.String("channel", Name), zap.String("account_id", accountID)),
		client:  opts.HTTPClient,
		bot:     tgbotapi.BotAPI{Token: token, Buffer: 100},
		toNew:   map[int64]int64{},

		menuChanged: make(chan struct{}, 1),
	}
	cmds := opts.Commands
	if cmds == nil {
		cmds = channels.Commands()
	}
	a.menu.Store(&cmds)
	a.bot.SetAPIEndpoint(cfg.APIRoot + "/bot%s/%s")
	return a, nil
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// AccountID implements channels.Adapter.
func (a *Adapter) AccountID() string { return a.account }

// Config returns the account configuration with defaults applied.
func (a *Adapter) Config() Config { return a.cfg }

// BotUserName is the bot's @username (without "@") once Run has connected.
func (a *Adapter) BotUserName() string {
	if s := a.self.Load(); s != nil {
		return s.UserName
	}
	return ""
}

// Connection implements channels.ConnReporter: getMe and the long poll
// (or setWebhook) move it.
func (a *Adapter) Connection() channels.Connection { return a.conn.Connection() }

// Run connects (getMe), then receives updates by long polling or webhook,
// calling h for each message, until ctx ends; it returns nil then. It
// returns an error early only for a token Telegram refuses. Call it once.
func (a *Adapter) Run(ctx context.Context, h channels.Handler) error {
	a.conn.SetMode(a.cfg.Mode)
	if err := a.loadMigrations(ctx); err != nil {
		a.log.Warn("loading group migrations failed", zap.Error(err))
	}
	if err := a.connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer a.startCommandMenu(ctx)()
	a.replayMigrations(ctx, h)
	if a.cfg.Mode == ModeWebhook {
		return a.runWebhook(ctx, h)
	}
	return a.runPolling(ctx, h)
}

// connect calls getMe until it succeeds, ctx ends or the token is refused.
func (a *Adapter) connect(ctx context.Context) error {
	bo := a.newBackoff()
	for {
		resp, err := a.call(ctx, "getMe", nil)
		if err == nil {
			var u tgbotapi.User
			if err := json.Unmarshal(resp.Result, &u); err != nil {
				return fmt.Errorf("telegram: getMe: decode: %w", err)
			}
			a.self.Store(&botIdentity{ID: u.ID, UserName: u.UserName, FirstName: u.FirstName})
			a.log.Info("telegram bot connected", zap.String("bot_username", u.UserName), zap.String("mode", a.cfg.Mode))
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ae *APIError
		if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
			err = fmt.Errorf("telegram: token refused: %w", err)
			a.conn.Stopped(err)
			return err
		}
		a.conn.Failed(err)
		wait := bo.next()
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			wait = ae.RetryAfter
		}
		a.log.Warn("telegram getMe failed, retrying", zap.Error(err), zap.Duration("retry_in", wait))
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// call makes one Bot API request bound to ctx; errors are *APIError for
// Telegram's answers. Timeout zero means requestTimeout.
func (a *Adapter) call(ctx context.Context, method string, params tgbotapi.Params) (*tgbotapi.APIResponse, error) {
	return a.callTimeout(ctx, method, params, requestTimeout)
}

func (a *Adapter) callTimeout(ctx context.Context, method string, params tgbotapi.Params, timeout time.Duration) (*tgbotapi.APIResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := a.bot
	b.Client = ctxClient{ctx: ctx, c: a.client}
	resp, err := b.MakeRequest(method, params)
	return resp, wrapErr(method, err)
}

// ctxClient binds requests made by tgbotapi to a context.
type ctxClient struct {
	ctx context.Context
	c   *http.Client
}

func (c ctxClient) Do(r *http.Request) (*http.Response, error) { return c.c.Do(r.WithContext(c.ctx)) }

// backoff is an exponential delay with jitter; not safe for concurrent use.
type backoff struct {
	min, max, cur time.Duration
}

func (a *Adapter) newBackoff() *backoff {
	return &backoff{min: a.opts.Backoff, max: a.opts.MaxBackoff}
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return b.cur + time.Duration(rand.Int64N(int64(b.cur)/5+1))
}

func (b *backoff) reset() { b.cur = 0 }

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
