package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// contextFresh rebuilds tr's context without the cache.
func contextFresh(t *testing.T, db *DB, tr *TranscriptLog) sessions.Context {
	t.Helper()
	db.chains.drop(tr.SessionID())
	c, err := tr.Context(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The cached chain, extended by the entries appended since, gives the
// context a rebuild from the database gives, after every kind of append,
// including appends through another DB (a replica) that the cache never
// saw, and compactions that move the start of the context.
func TestCachedContextEqualsRebuild(t *testing.T) {
	t.Parallel()
	db, ctx, tr, replica := twoTranscripts(t)
	var ids []string
	steps := []struct {
		name string
		do   func() error
	}{
		{"first append", func() error {
			got, err := tr.Append(ctx, text(sessions.RoleUser, "one"), text(sessions.RoleAssistant, "two"))
			ids = append(ids, got...)
			return err
		}},
		{"lazy append", func() error { _, err := tr.AppendLazy(ctx, text(sessions.RoleUser, "three")); return err }},
		{"append by a replica", func() error {
			got, err := replica.Append(ctx, text(sessions.RoleAssistant, "four"))
			ids = append(ids, got...)
			return err
		}},
		{"compaction", func() error {
			_, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s1", FirstKeptEntryID: ids[2], TokensBefore: 10, TokensAfter: 2})
			return err
		}},
		{"after the compaction", func() error { _, err := tr.Append(ctx, text(sessions.RoleUser, "five")); return err }},
		{"compaction by a replica, keeping nothing", func() error {
			_, err := replica.AppendCompaction(ctx, sessions.Compaction{Summary: "s2", TokensBefore: 10, TokensAfter: 1})
			return err
		}},
		{"last", func() error { _, err := tr.Append(ctx, text(sessions.RoleUser, "six")); return err }},
	}
	if _, err := tr.Context(ctx); err != nil { // empty: nothing cached
		t.Fatal(err)
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		cached, err := tr.Context(ctx)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if db.chains.get(sidA) == nil {
			t.Fatalf("%s: nothing cached after Context", s.name)
		}
		if d := cmp.Diff(contextFresh(t, db, tr), cached); d != "" {
			t.Errorf("%s: cached context differs from a rebuild (-rebuild +cached):\n%s", s.name, d)
		}
		if _, err := tr.Context(ctx); err != nil { // rebuild the cache for the next step
			t.Fatal(err)
		}
	}
	c, _ := tr.Context(ctx)
	if c.Summary != "s2" || len(c.Messages) == 0 {
		t.Errorf("final context = summary %q, %d messages; want s2's and the last message", c.Summary, len(c.Messages))
	}
}

// A transcript removed behind the cache (maintenance deletes an archived
// session's rows) is read again, not served from memory.
func TestCachedContextNoticesRemoval(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	tr, err := db.Transcript(sidB, transcript.Header{SessionKey: "agent:main:main", AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, text(sessions.RoleUser, "old"), text(sessions.RoleAssistant, "old reply")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Context(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM transcript_entries WHERE session_id = $1`, `DELETE FROM transcript_heads WHERE session_id = $1`} {
		if _, err := db.pool.Exec(ctx, q, sidB); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 0 {
		t.Errorf("context of a removed transcript has %d messages, want none", len(c.Messages))
	}
	if db.chains.get(sidB) != nil {
		t.Error("a removed transcript's chain is still cached")
	}
}

// The cache keeps at most chainCacheSize chains, dropping the least
// recently used.
func TestChainCacheBound(t *testing.T) {
	t.Parallel()
	var c chainCache
	for i := range chainCacheSize + 10 {
		c.put(&cachedChain{id: string(rune('a'+i%26)) + string(rune(i)), chain: transcript.NewChain(true)})
	}
	if n := c.ll.Len(); n != chainCacheSize || len(c.m) != chainCacheSize {
		t.Errorf("cache holds %d (%d in the map), want %d", n, len(c.m), chainCacheSize)
	}
	if c.get("a"+string(rune(0))) != nil {
		t.Error("the oldest chain was not dropped")
	}
}

// AppendLazyContext's context is the one a rebuild gives right after the
// append, with the chain cached or not, after appends of a replica the
// cache never saw; with the chain cached it costs the append's round trip
// alone. Concurrent calls each see their own append.
func TestAppendLazyContext(t *testing.T) {
	t.Parallel()
	db, ctx, tr, replica := twoTranscripts(t)
	check := func(name string, msg string) {
		t.Helper()
		before := opCounts(db, OpAppend, OpContext)
		_, got, err := tr.AppendLazyContext(ctx, text(sessions.RoleUser, msg))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		after := opCounts(db, OpAppend, OpContext)
		cached := db.chains.get(sidA) != nil
		if d := cmp.Diff(contextFresh(t, db, tr), got); d != "" {
			t.Errorf("%s: context differs from a rebuild after the append (-rebuild +got):\n%s", name, d)
		}
		trips := after[OpAppend][0] - before[OpAppend][0] + after[OpContext][0] - before[OpContext][0]
		if cached && trips != 1 {
			t.Errorf("%s: %d round trips with the chain cached, want 1", name, trips)
		}
		if _, err := tr.Context(ctx); err != nil { // cache the chain again
			t.Fatal(err)
		}
	}
	check("empty transcript", "one")
	check("cached", "two")
	if _, err := replica.Append(ctx, text(sessions.RoleAssistant, "from a replica")); err != nil {
		t.Fatal(err)
	}
	check("after a replica's append", "three")
	db.chains.drop(sidA)
	check("nothing cached", "four")
	if _, err := replica.AppendCompaction(ctx, sessions.Compaction{Summary: "s", TokensBefore: 10, TokensAfter: 1}); err != nil {
		t.Fatal(err)
	}
	check("after a replica's compaction", "five")

	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			msg := fmt.Sprintf("concurrent %d", i)
			_, c, err := tr.AppendLazyContext(ctx, text(sessions.RoleUser, msg))
			if err == nil && !strings.Contains(allText(c), msg) {
				err = fmt.Errorf("%s: the context lacks its own append: %q", msg, allText(c))
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// allText is the text of the context's messages (consecutive user
// messages are merged).
func allText(c sessions.Context) string {
	var b strings.Builder
	for _, m := range c.Messages {
		b.WriteString(m.Text())
		b.WriteString("\n")
	}
	return b.String()
}

// twoTranscripts opens session sidA's transcript through a test database
// and through a second DB on it (a replica whose appends the first one's
// cache never sees).
func twoTranscripts(t *testing.T) (*DB, context.Context, *TranscriptLog, *TranscriptLog) {
	t.Helper()
	db, url := openTest(t)
	ctx := ctxT(t)
	db2, err := Open(ctx, Options{URL: url, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db2.Close)
	hdr := transcript.Header{SessionKey: "agent:main:main", AgentID: "main"}
	tr, err := db.Transcript(sidA, hdr)
	if err != nil {
		t.Fatal(err)
	}
	replica, err := db2.Transcript(sidA, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return db, ctx, tr, replica
}
