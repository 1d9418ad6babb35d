package discord

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Catching up: Discord does not queue events for a bot that is down (a new
// process identifies afresh and gets nothing of what was said meanwhile),
// so the adapter remembers, per channel, the newest message it has seen
// (a cursor kept by the daemon's storage, written at most once a second,
// and in memory) and, on every gateway connect, reads each remembered
// channel's history (stored, or noted by this process and not yet stored)
// after it (GET /channels/{id}/messages?after=…) and hands those messages
// to the handler in order, as if they had just arrived. Messages already
// journaled are duplicates there (the journal knows their ids), so a
// message seen both live and in the history is handled once.

// CursorStore keeps the adapter's per-channel cursors across restarts;
// sessions.Cursors satisfies it.
type CursorStore interface {
	CursorsOf(ctx context.Context, scope string) (map[string]string, error)
	SetCursor(ctx context.Context, scope, name, value string) error
}

// Catch-up defaults (Options.CatchUpMaxAge, CatchUpMaxMessages,
// CatchUpMaxChannels).
const (
	DefaultCatchUpMaxAge      = 24 * time.Hour
	DefaultCatchUpMaxMessages = 500
	DefaultCatchUpMaxChannels = 200
	// cursorFlushEvery is how often noted cursors are written.
	cursorFlushEvery = time.Second
	historyPage      = 100
)

// cursorScope is the account's scope in the CursorStore.
func (a *Adapter) cursorScope() string { return "discord:" + a.id }

// seenCursors is the newest message handled per channel, and which of
// them changed since the last write. Safe for concurrent use.
type seenCursors struct {
	// first is signalled when a channel gets its first cursor in this
	// process: it is written at once, not at the next tick, so a process
	// killed within a second of its start (the crash test's) still leaves
	// every channel it heard a cursor to catch up from. Nil: no signal.
	first chan struct{}

	mu    sync.Mutex
	last  map[string]cursor
	dirty map[string]bool
	held  map[string]string // channel → the first message not taken (held.go)
}

// cursor is a channel's newest handled message and when it was handled.
type cursor struct {
	id string
	at time.Time
}

// String is the stored form: "<message id> <unix seconds>".
func (c cursor) String() string { return c.id + " " + strconv.FormatInt(c.at.Unix(), 10) }

// parseCursor reads a stored cursor; ok is false for a malformed one.
func parseCursor(v string) (cursor, bool) {
	id, at, _ := strings.Cut(v, " ")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return cursor{}, false
	}
	sec, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return cursor{}, false
	}
	return cursor{id: id, at: time.Unix(sec, 0)}, true
}

// note records that message id of channel was handled (kept when newer
// than the channel's cursor). A channel held at a message the handler did
// not take (held.go) keeps its cursor before it until that message itself
// is noted.
func (s *seenCursors) note(channel, id string, now time.Time) {
	if channel == "" || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last, s.dirty = map[string]cursor{}, map[string]bool{}
	}
	if h, held := s.held[channel]; held {
		if snowflakeCmp(id, h) > 0 {
			return
		}
		if id == h {
			delete(s.held, channel)
		}
	}
	c, ok := s.last[channel]
	if ok && snowflakeCmp(id, c.id) <= 0 {
		return
	}
	s.last[channel], s.dirty[channel] = cursor{id: id, at: now}, true
	if !ok && s.first != nil {
		select {
		case s.first <- struct{}{}:
		default:
		}
	}
}

// takeDirty returns the cursors changed since the last call.
func (s *seenCursors) takeDirty() map[string]cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]cursor, len(s.dirty))
	for ch := range s.dirty {
		out[ch] = s.last[ch]
	}
	clear(s.dirty)
	return out
}

// redirty marks cursors whose write failed for the next flush, unless a
// newer one replaced them meanwhile.
func (s *seenCursors) redirty(failed map[string]cursor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch, c := range failed {
		if s.last[ch] == c {
			s.dirty[ch] = true
		}
	}
}

// flushCursors writes the noted cursors every cursorFlushEvery until ctx
// ends, then once more (bounded). Run starts it and waits for it.
func (a *Adapter) flushCursors(ctx context.Context) {
	t := time.NewTicker(cursorFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			a.writeCursors(fctx)
			cancel()
			return
		case <-t.C:
			a.writeCursors(ctx)
		case <-a.seen.first:
			a.writeCursors(ctx)
		}
	}
}

func (a *Adapter) writeCursors(ctx context.Context) {
	dirty := a.seen.takeDirty()
	if len(dirty) == 0 {
		return
	}
	failed := map[string]cursor{}
	var firstErr error
	for ch, c := range dirty {
		if err := a.opts.Cursors.SetCursor(ctx, a.cursorScope(), ch, c.String()); err != nil {
			failed[ch] = c
			firstErr = cmp.Or(firstErr, err)
		}
	}
	if len(failed) > 0 {
		a.seen.redirty(failed)
		if ctx.Err() == nil {
			a.log.Warn("catch-up cursors not saved; retrying", zap.Int("channels", len(failed)), zap.Error(firstErr))
		}
	}
}

// catchUp hands h the messages said while the adapter was not connected:
// for the channels with a cursor (the CatchUpMaxChannels most recently
// active, within CatchUpMaxAge), those after the cursor and younger than
// CatchUpMaxAge, at most CatchUpMaxMessages a channel, oldest first. It
// runs on Run's goroutine after each connect, before the events queued
// meanwhile.
func (a *Adapter) catchUp(ctx context.Context, h channels.Handler) {
	if a.opts.Cursors == nil {
		return
	}
	stored, err := a.opts.Cursors.CursorsOf(ctx, a.cursorScope())
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("catch-up limited to the channels heard since the start: stored cursors not readable", zap.Error(err))
		stored = nil
	}
	now := time.Now()
	cutoff := now.Add(-a.catchUpMaxAge())
	type chanCursor struct {
		ch string
		cursor
	}
	var todo []chanCursor
	taken := map[string]bool{} // channels whose stored cursor was read
	// What the new session's GUILD_CREATEs leave to read (catchup_guild.go).
	a.plan = catchUpPlan{stored: map[string]cursor{}}
	for ch, v := range stored {
		c, ok := parseCursor(v)
		if !ok {
			a.log.Warn("catch-up cursor unreadable; channel skipped", zap.String("chat_id", ch), zap.String("cursor", v))
			continue
		}
		a.plan.stored[ch] = c
		if c.at.After(a.plan.heard) {
			a.plan.heard = c.at
		}
		if mine, ok := a.seen.get(ch); ok && snowflakeCmp(mine.id, c.id) > 0 {
			c = mine // this process saw newer (a reconnect)
		}
		if c.at.After(cutoff) {
			todo = append(todo, chanCursor{ch, c})
		}
		taken[ch] = true
	}
	// Channels this process heard whose cursor is not stored yet (the
	// write is pending, slow or failing): a reconnect that could not
	// resume must catch them up too.
	for ch, c := range a.seen.all() {
		if !taken[ch] && c.at.After(cutoff) {
			todo = append(todo, chanCursor{ch, c})
		}
		if c.at.After(a.plan.heard) {
			a.plan.heard = c.at
		}
	}
	slices.SortFunc(todo, func(x, y chanCursor) int { return y.at.Compare(x.at) })
	if n := a.catchUpMaxChannels(); len(todo) > n {
		a.log.Warn("catch-up limited to the most recently active channels", zap.Int("channels", len(todo)), zap.Int("max_channels", n))
		todo = todo[:n]
		a.plan.warned = true
	}
	a.plan.budget = a.catchUpMaxChannels() - len(todo)
	total := 0
	for _, c := range todo {
		if ctx.Err() != nil {
			return
		}
		total += a.catchUpChannel(ctx, h, c.ch, c.id, cutoff)
	}
	if total > 0 {
		a.log.Info("caught up on messages sent while disconnected", zap.Int("messages", total), zap.Int("channels", len(todo)))
	}
}

// catchUpChannel hands h channel's messages after id (younger than
// cutoff, at most CatchUpMaxMessages) and returns how many it handed.
func (a *Adapter) catchUpChannel(ctx context.Context, h channels.Handler, channel, after string, cutoff time.Time) int {
	var guild string
	fetched := false
	n, max := 0, a.catchUpMaxMessages()
	// Only messages new to the journal count against max: a stale cursor
	// (a process killed before its last write) first re-reads messages
	// already taken, which the journal refuses as duplicates. The pages
	// read are bounded all the same.
	counted := func(ctx context.Context, in channels.Inbound) error {
		err := h(ctx, in)
		if err == nil {
			n++
		}
		return err
	}
	for pages := 0; n < max && pages < 4*max/historyPage+1; pages++ {
		page, err := a.s.ChannelMessages(channel, historyPage, "", after, "", discordgo.WithContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("catch-up: channel history not readable", zap.String("chat_id", channel), zap.Error(err))
			}
			if channelGone(err) {
				// Deleted, or out of the bot's sight: a message held there
				// cannot be read again (held.go).
				a.passHeld(channel, "")
			}
			return n
		}
		if len(page) == 0 {
			a.passHeld(channel, "")
			return n
		}
		slices.SortFunc(page, func(x, y *discordgo.Message) int { return snowflakeCmp(x.ID, y.ID) })
		for _, m := range page {
			after = m.ID
			a.passHeld(channel, m.ID)
			if m.ChannelID == "" {
				m.ChannelID = channel
			}
			if m.Timestamp.Before(cutoff) || n >= max {
				a.seen.note(channel, m.ID, time.Now())
				continue
			}
			if !fetched { // REST messages carry no guild_id
				ch := a.channel(ctx, channel)
				if ch == nil {
					// Without its guild a guild message would be judged as
					// a direct message: read the channel again later.
					a.log.Warn("catch-up: channel could not be looked up; it is read again later", zap.String("chat_id", channel))
					a.seen.hold(channel, m.ID, time.Now())
					return n
				}
				guild, fetched = ch.GuildID, true
			}
			if m.GuildID == "" {
				m.GuildID = guild
			}
			if a.handle(ctx, counted, &discordgo.MessageCreate{Message: m}) {
				return n // not taken (an outage): the channel is read again from it later (held.go)
			}
		}
		if len(page) < historyPage {
			a.passHeld(channel, "")
			return n
		}
	}
	if n >= max {
		a.log.Warn("catch-up: more messages than the limit; the older ones were taken, the rest left",
			zap.String("chat_id", channel), zap.Int("max_messages", max))
	}
	return n
}

// channelGone reports Discord's answer for a channel that was deleted
// (404, Unknown Channel) or that the bot may no longer see (403, Missing
// Access): reading it again will not help.
func channelGone(err error) bool {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	return re.Response.StatusCode == http.StatusNotFound || re.Response.StatusCode == http.StatusForbidden
}

// all returns every channel's cursor noted by this process.
func (s *seenCursors) all() map[string]cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.last)
}

// get returns channel's cursor as noted by this process.
func (s *seenCursors) get(channel string) (cursor, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.last[channel]
	return c, ok
}

func (a *Adapter) catchUpMaxAge() time.Duration {
	return cmp.Or(a.opts.CatchUpMaxAge, DefaultCatchUpMaxAge)
}

func (a *Adapter) catchUpMaxMessages() int {
	return cmp.Or(a.opts.CatchUpMaxMessages, DefaultCatchUpMaxMessages)
}

func (a *Adapter) catchUpMaxChannels() int {
	return cmp.Or(a.opts.CatchUpMaxChannels, DefaultCatchUpMaxChannels)
}

// snowflakeCmp orders Discord ids as numbers (ids that are not numbers,
// never sent by Discord, by length then text).
func snowflakeCmp(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
	}
	return cmp.Compare(x, y)
}
