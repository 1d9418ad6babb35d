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
// or operator action (the HTTP API's patch, through Serialise) forgets
// them; a change made by another replica applies from the session's next
// turn, or at its next message after queueCacheTTL. It is safe for
// concurrent use.
type queueCache struct {
	mu sync.Mutex
	m  map[routing.Key]queueCached // by session; guarded by mu
	// forgets counts forget calls (guarded by mu): a read of an entry
	// that began before one may have read the settings it dropped, so
	// noteRead keeps it only when none came in between.
	forgets uint64
}

type queueCached struct {
	sq    sessionQueue
	until time.Time
}

// get returns key's settings if they were noted within queueCacheTTL;
// otherwise a mark to hand noteRead with the entry read then.
func (c *queueCache) get(key routing.Key) (sessionQueue, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.m[key]
	if !ok || !time.Now().Before(q.until) {
		return sessionQueue{}, false, c.forgets
	}
	return q.sq, true, 0
}

// noteRead records the settings of entry e, read after get returned mark,
// unless a forget came in between (the entry may predate the change that
// forget announced).
func (c *queueCache) noteRead(key routing.Key, e sessions.Entry, mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forgets != mark {
		return
	}
	c.noteLocked(key, e)
}

// note records the settings of entry e as they are now (a turn's Begin:
// it runs on the lane, after any forget of its session).
func (c *queueCache) note(key routing.Key, e sessions.Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteLocked(key, e)
}

func (c *queueCache) noteLocked(key routing.Key, e sessions.Entry) {
	sq := queueOf(e)
	now := time.Now()
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
	c.forgets++
}

// queueOf is the session's own queue settings in e.
func queueOf(e sessions.Entry) sessionQueue {
	return sessionQueue{Mode: e.QueueMode, Debounce: time.Duration(e.QueueDebounceMs) * time.Millisecond,
		Cap: e.QueueCap, Drop: e.QueueDrop}
}
