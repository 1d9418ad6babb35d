package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Counters added while the database refuses writes are kept and added
// once it takes them again (by the next AddCounters, or Flush), to the
// session they were counted for, as the files backend keeps them in
// memory until its next flush. They were dropped: the session's message
// and token counts lagged for good (SQLite has no counter repair at
// start), /status and the archive list under-counting.
func TestCountersDuringStorageFaultAreKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db := openBusyDB(t, path)
	defer db.Close()
	st := db.Store("main", nil)
	key := routing.Key{Agent: "main", Channel: "web", Kind: routing.Direct, Peer: "p1"}
	other := routing.Key{Agent: "main", Channel: "web", Kind: routing.Direct, Peer: "p2"}
	reset := routing.Key{Agent: "main", Channel: "web", Kind: routing.Direct, Peer: "p3"}
	for _, k := range []routing.Key{key, other, reset} {
		if _, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "web", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	release := holdWriteLock(t, path)
	st.AddCounters(key, sessions.Counters{Messages: 2, InputTokens: 7, TotalTokens: 10, ContextTokens: 500, Model: "m1"})
	st.AddCounters(key, sessions.Counters{Messages: 1, TotalTokens: 5})
	st.AddCounters(other, sessions.Counters{Messages: 4})
	st.AddCounters(reset, sessions.Counters{Messages: 9})
	release()
	if _, err := st.Reset(ctx, reset, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	st.AddCounters(key, sessions.Counters{Messages: 1, TotalTokens: 1})
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if e.MessageCount != 4 || e.TotalTokens != 16 || e.InputTokens != 7 || e.ContextTokens != 500 || e.Model != "m1" {
		t.Errorf("counters %d messages, %d/%d tokens, context %d, model %q; want 4, 16/7, 500, m1",
			e.MessageCount, e.TotalTokens, e.InputTokens, e.ContextTokens, e.Model)
	}
	o, _, err := st.Get(other)
	if err != nil {
		t.Fatal(err)
	}
	if o.MessageCount != 4 {
		t.Errorf("other session: %d messages, want the 4 counted during the fault (Flush)", o.MessageCount)
	}
	r, _, err := st.Get(reset)
	if err != nil {
		t.Fatal(err)
	}
	if r.MessageCount != 0 {
		t.Errorf("a session reset after the fault has %d messages: the old session's counts moved to the new one", r.MessageCount)
	}
}
