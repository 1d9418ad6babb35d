package discord

import (
	"context"
	"math/big"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// A message the handler did not take for an outage (its storage full or
// failing: channels.ErrUnavailable; channels.Handler says such a message
// is not acknowledged and comes again), or when Run stopped, holds its channel's cursor just before it: later messages of the
// channel are handled but do not move the cursor, so the catch-up after
// the next connect or start reads the channel again from there. While a
// channel is held, Run also reads it again every heldRetryEvery, so the
// message comes once the storage is back without waiting for a
// reconnect; messages handled meanwhile are not handed over twice
// (recent.go, and the journal).

// heldRetryEvery is how often held channels are read again
// (Adapter.heldEvery; tests shorten it).
const heldRetryEvery = 10 * time.Second

// hold keeps channel's cursor before message id, which was not taken,
// until id itself is noted.
func (s *seenCursors) hold(channel, id string, now time.Time) {
	if channel == "" || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, held := s.held[channel]; held && snowflakeCmp(h, id) <= 0 {
		return
	}
	if s.held == nil {
		s.held = map[string]string{}
	}
	s.held[channel] = id
	if s.last == nil {
		s.last, s.dirty = map[string]cursor{}, map[string]bool{}
	}
	if c, ok := s.last[channel]; !ok || snowflakeCmp(c.id, id) >= 0 {
		s.last[channel], s.dirty[channel] = cursor{id: before(id), at: now}, true
	}
}

// pass releases channel's hold when its history, read in order from the
// cursor, reached id (a message after the one held) or, with id "", its
// end: the message held is gone (its author deleted it) or was taken
// meanwhile (note released it then). It reports whether it released one.
// Without this a deleted message held its channel for good: read again
// every heldRetryEvery, its cursor never moving on.
func (s *seenCursors) pass(channel, id string) (released string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, held := s.held[channel]
	if !held || (id != "" && snowflakeCmp(id, h) <= 0) {
		return ""
	}
	delete(s.held, channel)
	return h
}

// passHeld is seenCursors.pass, logged.
func (a *Adapter) passHeld(channel, id string) {
	if h := a.seen.pass(channel, id); h != "" {
		a.log.Info("message held no longer in the channel's history (deleted): channel released",
			zap.String("chat_id", channel), zap.String("message_id", h))
	}
}

// heldChannels returns the cursors of the held channels.
func (s *seenCursors) heldChannels() map[string]cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) == 0 {
		return nil
	}
	out := make(map[string]cursor, len(s.held))
	for ch := range s.held {
		out[ch] = s.last[ch]
	}
	return out
}

// before is the snowflake just below id ("0" for one that is not a number).
func before(id string) string {
	n, ok := new(big.Int).SetString(id, 10)
	if !ok || n.Sign() <= 0 {
		return "0"
	}
	return n.Sub(n, big.NewInt(1)).String()
}

// retryHeld reads the held channels again from their cursors (Run's
// goroutine).
func (a *Adapter) retryHeld(ctx context.Context, h channels.Handler) {
	cutoff := time.Now().Add(-a.catchUpMaxAge())
	for ch, c := range a.seen.heldChannels() {
		if ctx.Err() != nil {
			return
		}
		if n := a.catchUpChannel(ctx, h, ch, c.id, cutoff); n > 0 {
			a.log.Info("messages not taken before were taken now", zap.String("chat_id", ch), zap.Int("messages", n))
		}
	}
}
