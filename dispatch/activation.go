package dispatch

import (
	"sync"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Group activation (issue 23, seed 002): a group session set to
// /activation always answers every message the room's rules admit, not
// only those that mention the bot; a room with mentionByName counts the
// bot's display name in a message as a mention. The access policy still
// decides who may speak: only a refusal for want of a mention is lifted.

// activationTTL is how long a session's activation is taken from the
// cache: unmentioned group chatter asks for it on every message, and a
// change made elsewhere (the API, another replica) applies after it.
// /activation itself forgets its session's at once.
const activationTTL = 10 * time.Second

// maxActivations bounds the cache; past it, it starts over.
const maxActivations = 10000

// activationCache remembers sessions' group activation; safe for
// concurrent use.
type activationCache struct {
	mu sync.Mutex // guards by
	by map[routing.Key]activationAt
}

type activationAt struct {
	mode string
	at   time.Time
}

func (c *activationCache) get(k routing.Key, now time.Time, read func() string) string {
	c.mu.Lock()
	a, ok := c.by[k]
	c.mu.Unlock()
	if ok && now.Sub(a.at) < activationTTL && !now.Before(a.at) {
		return a.mode
	}
	mode := read()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil || len(c.by) >= maxActivations {
		c.by = map[routing.Key]activationAt{}
	}
	c.by[k] = activationAt{mode: mode, at: now}
	return mode
}

func (c *activationCache) forget(k routing.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.by, k.Canonical())
}

// Addressed reports whether in, an unmentioned group message, addresses
// the bot all the same: its room counts the bot's name (mentionByName)
// and the text says it, or its session's activation is always. Adapters
// ask it (with the mention policy) before dropping such a message early.
func (d *Dispatcher) Addressed(in channels.Inbound) bool { return d.addressed(in) }

func (d *Dispatcher) addressed(in channels.Inbound) bool {
	if in.ChatType == channels.Direct || in.Mentioned {
		return false
	}
	rt := d.rt.Load()
	if rt.RoomFor(in).MentionByName {
		if n, ok := d.adapter(in.Channel, in.AccountID).(channels.Namer); ok && channels.SaysName(in.Text, n.BotName()) {
			return true
		}
	}
	route, err := rt.Route(in)
	if err != nil {
		return false
	}
	key := route.Key.Canonical()
	mode := d.activations.get(key, d.opts.Now(), func() string {
		st, err := d.opts.Sessions.Store(route.AgentID)
		if err != nil {
			return ""
		}
		e, ok, err := st.Get(key)
		if err != nil || !ok {
			return ""
		}
		return e.GroupActivation
	})
	return mode == sessions.ActivationAlways
}
