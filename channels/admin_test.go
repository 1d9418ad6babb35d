package channels_test

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gateway/gateway/channels"
)

// TestAdminCacheExpires: an answer is kept for AdminTTL, per room and
// user, then forgotten.
func TestAdminCacheExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c channels.AdminCache
		if _, ok := c.Get("room", "u1"); ok {
			t.Fatal("an empty cache answered")
		}
		c.Put("room", "u1", true)
		c.Put("room", "u2", false)
		for _, tt := range []struct {
			room, user string
			admin, ok  bool
		}{
			{"room", "u1", true, true},
			{"room", "u2", false, true},
			{"other", "u1", false, false},
		} {
			if admin, ok := c.Get(tt.room, tt.user); admin != tt.admin || ok != tt.ok {
				t.Errorf("Get(%s, %s) = %v, %v; want %v, %v", tt.room, tt.user, admin, ok, tt.admin, tt.ok)
			}
		}
		time.Sleep(channels.AdminTTL - time.Second)
		if admin, ok := c.Get("room", "u1"); !admin || !ok {
			t.Errorf("answer forgotten before AdminTTL")
		}
		time.Sleep(time.Second)
		if _, ok := c.Get("room", "u1"); ok {
			t.Errorf("answer kept past AdminTTL")
		}
	})
}

// TestAdminCacheBounded: a full cache drops expired entries first, then
// the one closest to expiry, and never grows past AdminCacheSize.
func TestAdminCacheBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c channels.AdminCache
		c.Put("room", "first", true)
		time.Sleep(time.Second)
		for i := 1; i < channels.AdminCacheSize; i++ {
			c.Put("room", strconv.Itoa(i), true)
		}
		if n := c.Len(); n != channels.AdminCacheSize {
			t.Fatalf("Len = %d, want %d", n, channels.AdminCacheSize)
		}
		c.Put("room", "new", true)
		if n := c.Len(); n != channels.AdminCacheSize {
			t.Fatalf("Len = %d after one more, want %d", n, channels.AdminCacheSize)
		}
		if _, ok := c.Get("room", "first"); ok {
			t.Error("the entry closest to expiry was kept")
		}
		if _, ok := c.Get("room", "new"); !ok {
			t.Error("the new entry was not kept")
		}
		c.Put("room", "1", false) // an update takes no room
		if admin, ok := c.Get("room", "1"); admin || !ok || c.Len() != channels.AdminCacheSize {
			t.Errorf("update: %v, %v, Len %d", admin, ok, c.Len())
		}
		time.Sleep(channels.AdminTTL)
		c.Put("room", "late", true)
		if n := c.Len(); n != 1 {
			t.Errorf("Len = %d once all expired, want 1 (expired entries dropped)", n)
		}
	})
}
