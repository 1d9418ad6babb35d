package dispatch

import (
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The cache serves what was noted last until it is forgotten.
func TestQueueCache(t *testing.T) {
	var c queueCache
	k := routing.Key{Agent: "main", Main: "main"}
	if _, ok := c.get(k); ok {
		t.Fatal("an empty cache has settings")
	}
	c.note(k, sessions.Entry{QueueMode: "steer", QueueDebounceMs: 1500, QueueCap: 3, QueueDrop: "old"})
	got, ok := c.get(k)
	if want := (sessionQueue{Mode: "steer", Debounce: 1500e6, Cap: 3, Drop: "old"}); !ok || got != want {
		t.Errorf("get = %+v, %v; want %+v", got, ok, want)
	}
	c.note(k, sessions.Entry{}) // the entry's own settings were cleared
	if got, ok := c.get(k); !ok || got != (sessionQueue{}) {
		t.Errorf("after a note of none: %+v, %v", got, ok)
	}
	c.forget(k)
	if _, ok := c.get(k); ok {
		t.Error("forgotten settings are still served")
	}
}
