package dispatch

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// deliveryContextOf is the entry's record of a reply sent to a: the
// channel, bot account, chat and thread (seed 002's deliveryContext).
func deliveryContextOf(a channels.Address) sessions.DeliveryContext {
	return sessions.DeliveryContext{Channel: a.Channel, To: a.ChatID, AccountID: a.AccountID, ThreadID: a.ThreadID}.Clean()
}

// noteDelivered records in rp's session entry where its reply was just
// delivered (Entry.DeliveryContext), once every chunk was accepted. The
// entry is written only when the place changed, so a session that keeps
// replying to one chat costs no index write per reply. A reply without a
// session (a notice) or whose session is gone changes nothing; a failed
// write is logged: the reply itself was delivered. A store that records
// it without a read-modify-write (sessions.DeliveryRecorder: PostgreSQL)
// is asked to.
func (o *outbox) noteDelivered(ctx context.Context, rp sessions.Reply, a channels.Address) {
	d := o.d
	if rp.SessionKey == "" || rp.AgentID == "" || a.Channel == "" {
		return
	}
	want := deliveryContextOf(a)
	ck := placedKey(rp.AgentID, rp.SessionKey)
	// The cache is asked before the key is parsed: it only holds keys that
	// parsed (noted at Begin or set below), and most replies go where the
	// last one went.
	known, have := o.placed.get(ck)
	if have && known == want {
		return
	}
	key, err := routing.Parse(rp.SessionKey)
	if err != nil {
		d.log.Warn("reply's session key unreadable; delivery context not recorded", zap.String("reply_id", rp.ID), zap.Error(err))
		return
	}
	store, err := d.opts.Sessions.Store(rp.AgentID)
	if err != nil {
		d.log.Warn("delivery context not recorded", zap.String("agent_id", rp.AgentID), zap.Error(err))
		return
	}
	if !have { // a reply recovered at start, or the cache started again: read
		e, ok, err := store.Get(key)
		if err != nil || !ok {
			return
		}
		known = e.DeliveryContext
	}
	if known == want {
		o.placed.set(ck, want)
		return
	}
	if rec, ok := store.(sessions.DeliveryRecorder); ok {
		err = rec.RecordDelivery(ctx, key, want) // PostgreSQL: one UPDATE, no read
	} else {
		_, err = store.Patch(ctx, key, func(e *sessions.Entry) error {
			e.DeliveryContext = want
			return nil
		})
	}
	if errors.Is(err, sessions.ErrNotFound) {
		return // deleted meanwhile: nothing to record it in
	}
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("delivery context not recorded", zap.Stringer("session_key", key), zap.Error(err))
		}
		return
	}
	o.placed.set(ck, want)
}

// notePlaced tells the cache the delivery context key's entry holds, as
// the turn's Begin read it, so that the turn's reply needs no read to
// know whether to record a new one.
func (o *outbox) notePlaced(agentID string, key routing.Key, dc sessions.DeliveryContext) {
	o.placed.set(placedKey(agentID, key.String()), dc)
}

func placedKey(agentID, sessionKey string) string { return agentID + "\x00" + sessionKey }

// placedCap bounds placedCache: past it the cache starts again empty (the
// next reply of each session reads its entry once more).
const placedCap = 16384

// placedCache is the delivery context this process last saw stored for
// each session (agent id and session key). It is a hint that saves the
// read: another replica recording another place for the session, or the
// session deleted and begun again, is not seen here, so a reply back to
// the cached place leaves that record until the place changes again (the
// field is informational: no delivery reads it; a reset keeps it).
type placedCache struct {
	mu sync.Mutex
	m  map[string]sessions.DeliveryContext // guarded by mu
}

func (c *placedCache) get(k string) (sessions.DeliveryContext, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, ok := c.m[k]
	return got, ok
}

func (c *placedCache) set(k string, dc sessions.DeliveryContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= placedCap {
		c.m = make(map[string]sessions.DeliveryContext)
	}
	c.m[k] = dc
}
