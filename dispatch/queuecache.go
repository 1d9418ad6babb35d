package dispatch

import (
	"sync"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// queueCacheTTL is how long a session's own queue settings, once read,
// serve its lane without reading its entry again; each turn reads them
// anew.
const queueCacheTTL = 30 * time.Second

// queueCacheSweep is the size past which adding to the cache first drops
// the expired settings.
const queueCacheSweep = 4096

// queueCache remembers each session's own queue settings (its entry's
// queueMode, queueDebounceMs, queueCap and queueDrop), so that the lane's
// settings, asked for at every enqueue, cost one storage read per session
// and queueCacheTTL rather than one per message. Each turn's Begin
// refreshes them from the entry it returns, and any command (/queue, /new)
// forgets them; a change made elsewhere (the HTTP API, another replica) applies
// from the session's next turn, or at its next message after
// queueCacheTTL. It is safe for concurrent use.
type queueCache struct {
	mu sync.Mutex
	m  map[routing.Key]queueCached // by session; guarded by mu
}

type queueCached struct {
	sq    sessionQueue
	until time.Time
}

// get returns key's settings if they were noted within queueCacheTTL.
func (c *queueCache) get(key routing.Key) (sessionQueue, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.m[key]
	if !ok || !time.Now().Before(q.until) {
		return sessionQueue{}, false
	}
	return q.sq, true
}

// note records the settings of entry e as they are now.
func (c *queueCache) note(key routing.Key, e sessions.Entry) {
	sq := queueOf(e)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[routing.Key]queueCached{}
	}
	if len(c.m) >= queueCacheSweep {
		for k, q := range c.m {
			if !now.Before(q.until) {
				delete(c.m, k)
			}
		}
	}
	c.m[key] = queueCached{sq: sq, until: now.Add(queueCacheTTL)}
}

// forget drops key's settings: the next enqueue reads its entry.
func (c *queueCache) forget(key routing.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// queueOf is the session's own queue settings in e.
func queueOf(e sessions.Entry) sessionQueue {
	return sessionQueue{Mode: e.QueueMode, Debounce: time.Duration(e.QueueDebounceMs) * time.Millisecond,
		Cap: e.QueueCap, Drop: e.QueueDrop}
}
