package channels

import (
	"context"
	"sync"
	"time"
)

// AdminChecker is implemented by adapters that can tell whether a sender
// administers the room a message came from on the platform itself (a
// Telegram chat's creator or administrators; a Discord member with the
// Administrator, Manage Server or Manage Channels permission in the
// channel, or the guild's owner). The dispatcher asks it, when
// commands.platformAdmins is on, before refusing a privileged command
// (/new, /reset, /switch, /delete) in a group; it never asks for ordinary
// messages or in DMs.
//
// IsAdmin reports whether in's sender administers in's room. It is false,
// without error, for a DM or a message without a sender. It may make a
// platform request (implementations cache answers for AdminTTL) and must
// return when ctx is done; an error means the platform could not tell, and
// the caller treats the sender as no administrator. It is safe for
// concurrent use.
type AdminChecker interface {
	IsAdmin(ctx context.Context, in Inbound) (bool, error)
}

// AdminTTL is how long an AdminCache keeps an answer: a burst of commands
// costs one platform request, and a sender promoted or demoted on the
// platform is seen within a minute.
const AdminTTL = 60 * time.Second

// AdminCacheSize bounds the entries of an AdminCache.
const AdminCacheSize = 4096

// AdminCache remembers IsAdmin answers per (room, user) for AdminTTL, at
// most AdminCacheSize of them: when full, expired entries go first, then the
// one closest to expiry. Errors are not cached. The zero value is ready; it
// is safe for concurrent use.
type AdminCache struct {
	mu sync.Mutex
	m  map[adminKey]adminEntry // guarded by mu
}

type adminKey struct{ room, user string }

type adminEntry struct {
	admin   bool
	expires time.Time
}

// Get returns the cached answer for user in room; ok is false when there
// is none or it expired.
func (c *AdminCache) Get(room, user string) (admin, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[adminKey{room, user}]
	if !ok || !time.Now().Before(e.expires) {
		return false, false
	}
	return e.admin, true
}

// Put records the answer for user in room for AdminTTL.
func (c *AdminCache) Put(room, user string, admin bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	k := adminKey{room, user}
	if c.m == nil {
		c.m = map[adminKey]adminEntry{}
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= AdminCacheSize {
		c.evictLocked(now)
	}
	c.m[k] = adminEntry{admin: admin, expires: now.Add(AdminTTL)}
}

// evictLocked makes room for one entry: it drops every expired entry, or
// else the one that expires first. c.mu must be held.
func (c *AdminCache) evictLocked(now time.Time) {
	var (
		oldest adminKey
		at     time.Time
	)
	for k, e := range c.m {
		if !now.Before(e.expires) {
			delete(c.m, k)
			continue
		}
		if at.IsZero() || e.expires.Before(at) {
			oldest, at = k, e.expires
		}
	}
	if len(c.m) >= AdminCacheSize {
		delete(c.m, oldest)
	}
}

// Len is the number of entries held, expired ones included.
func (c *AdminCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
