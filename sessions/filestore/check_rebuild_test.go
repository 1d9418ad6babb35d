package filestore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// openRebuildState opens a files backend on a new state directory, with
// agent main's store, for a test that then removes its index.
func openRebuildState(t *testing.T) (string, *Manager, *Store) {
	t.Helper()
	state := t.TempDir()
	m, err := Open(Options{StateDir: state, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return state, m, mustStore(t, m, "main")
}

// TestRebuildRecomputesTokensAndTitle: doctor --fix rebuilding the index
// from transcripts sets the token counters from the assistant messages'
// usage (the context from the last one, or a later compaction's
// tokensAfter) and titles without the "[message_id: N] " prefix the
// message tool stores before user text.
func TestRebuildRecomputesTokensAndTitle(t *testing.T) {
	state, m, st := openRebuildState(t)
	dir := st.Dir()
	at := time.Now().Add(-time.Hour)
	ctx := context.Background()
	reply := func(in, out int64) sessions.Message {
		a := assistantText("ok")
		a.Usage = &sessions.Usage{Input: in, Output: out, TotalTokens: in + out}
		return a
	}
	k1, k2 := dmKey(t, "main", "p1"), dmKey(t, "main", "p2")
	e1, _ := mustBegin(t, st, k1, sessions.Origin{Channel: "telegram", ChatType: "direct", Title: "hello there", At: at})
	tr, err := st.Transcript(e1.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, sessions.UserText("[message_id: 42] hello there", at), reply(100, 20),
		sessions.UserText("[message_id: 43] more", at), reply(150, 30)); err != nil {
		t.Fatal(err)
	}
	e2, _ := mustBegin(t, st, k2, sessions.Origin{Channel: "telegram", ChatType: "direct", Title: "x", At: at})
	tr2, err := st.Transcript(e2.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tr2.Append(ctx, sessions.UserText("first", at), reply(10, 5), sessions.UserText("second", at))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr2.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: ids[2], TokensBefore: 900, TokensAfter: 77}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(filepath.Join(dir, indexName)))
	_ = os.Remove(filepath.Join(dir, deltaName)) // a clean close may leave none

	ps := wantCodes(t, state, sessions.CodeOrphanTranscript+" "+sessions.CodeOrphanTranscript)
	repairAll(t, state, ps)
	idx, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	got1, got2 := idx[k1.String()], idx[k2.String()]
	if got1.Title != "hello there" {
		t.Errorf("rebuilt title %q, want %q (no [message_id: N] prefix)", got1.Title, "hello there")
	}
	if got1.InputTokens != 250 || got1.OutputTokens != 50 || got1.TotalTokens != 300 || got1.ContextTokens != 180 ||
		got1.Model != "echo-1" || got1.Provider != "echo" {
		t.Errorf("rebuilt counters %+v, want in 250, out 50, total 300, context 180, model echo/echo-1", got1)
	}
	if got2.InputTokens != 10 || got2.ContextTokens != 77 || got2.CompactionCount != 1 {
		t.Errorf("rebuilt counters after a compaction %+v, want in 10, context 77 (tokensAfter), 1 compaction", got2)
	}
}

func TestStoredTitle(t *testing.T) {
	for in, want := range map[string]string{
		"[message_id: 42] hello": "hello",
		"[message_id: 7]":        "",
		"[Ann] hi":               "[Ann] hi",
		"plain text":             "plain text",
	} {
		if got := sessions.StoredTitle(in); got != want {
			t.Errorf("StoredTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRebuildFollowsMovedKeys: a group's session moved to its
// supergroup's key (RenameKey, and the move recorded under
// sessions.KeyMovesScope, as the dispatcher does) keeps its transcript,
// whose header names the group's key. doctor --fix rebuilding the index
// from the transcripts puts the entry under the supergroup's key, where
// the session was moved, not back under the group's.
func TestRebuildFollowsMovedKeys(t *testing.T) {
	state, m, st := openRebuildState(t)
	dir := st.Dir()
	at := time.Now().Add(-time.Hour)
	ctx := context.Background()
	oldKey, err := routing.Parse("agent:main:telegram:group:-100")
	must(t, err)
	newKey, err := routing.Parse("agent:main:telegram:group:-1001")
	must(t, err)
	e, _ := mustBegin(t, st, oldKey, sessions.Origin{Channel: "telegram", ChatType: "group", At: at})
	tr, err := st.Transcript(e.SessionID)
	must(t, err)
	if _, err := tr.Append(ctx, sessions.UserText("remember mango", at), assistantText("ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RenameKey(ctx, oldKey, newKey); err != nil {
		t.Fatal(err)
	}
	must(t, m.cursorFiles().SetCursor(ctx, sessions.KeyMovesScope, oldKey.String(), newKey.String()))
	must(t, m.Close())
	must(t, os.Remove(filepath.Join(dir, indexName)))
	_ = os.Remove(filepath.Join(dir, deltaName))

	ps := wantCodes(t, state, sessions.CodeOrphanTranscript)
	if ps[0].Key != newKey.String() {
		t.Errorf("orphan's key %q, want the moved key %q (%s)", ps[0].Key, newKey, ps[0].Message)
	}
	repairAll(t, state, ps)
	idx, err := ReadIndex(dir)
	must(t, err)
	if got, ok := idx[newKey.String()]; !ok || got.SessionID != e.SessionID {
		t.Errorf("rebuilt index %v: want session %s under %s", idx, e.SessionID, newKey)
	}
	if _, ok := idx[oldKey.String()]; ok {
		t.Errorf("rebuilt index has the group's key %s again: the move was undone", oldKey)
	}
}

// TestRebuildTitleSkipsForkedCopies: a rebuilt entry is titled by the
// first user message that came in to its session (one with journal
// record ids), not by a forked thread's copy of its parent's first
// message.
func TestRebuildTitleSkipsForkedCopies(t *testing.T) {
	state, m, st := openRebuildState(t)
	dir := st.Dir()
	at := time.Now().Add(-time.Hour)
	k := dmKey(t, "main", "p1")
	e, _ := mustBegin(t, st, k, sessions.Origin{Channel: "telegram", ChatType: "direct", Title: "x", At: at})
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	own := sessions.UserText("the thread's own question", at)
	own.RecordIDs = []string{"tg:default:p1:1"}
	if _, err := tr.Append(context.Background(), sessions.UserText("the parent's question", at), assistantText("ok"), own, assistantText("ok")); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(filepath.Join(dir, indexName)))
	_ = os.Remove(filepath.Join(dir, deltaName))
	repairAll(t, state, wantCodes(t, state, sessions.CodeOrphanTranscript))
	idx, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := idx[k.String()].Title; got != "the thread's own question" {
		t.Errorf("rebuilt title %q, want the thread's own first message", got)
	}
}
