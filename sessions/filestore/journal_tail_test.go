package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/sessions"
)

func textMessage(role, text string) sessions.Message {
	return sessions.Message{Role: role, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}}
}

// answerWithReply runs what a turn does on the files backend: its input
// appended lazily, then its answer with the reply ahead. It returns the
// reply the journal took.
func answerWithReply(t *testing.T, m *Manager, sessionID, rec, text string) sessions.Reply {
	t.Helper()
	ctx := context.Background()
	tr, err := mustStore(t, m, "main").Transcript(sessionID)
	if err != nil {
		t.Fatal(err)
	}
	j := m.Journal()
	if _, err := j.Accept(ctx, sessions.Record{ID: rec, AgentID: "main", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendLazy(ctx, textMessage("user", "question "+rec)); err != nil {
		t.Fatal(err)
	}
	ra := &sessions.ReplyAhead{Journal: j, Build: func(entryID string) (sessions.Reply, []sessions.UsageRow) {
		return sessions.Reply{ID: uuid.NewString(), Records: []string{rec}, Chunks: []string{text}, EntryID: entryID}, nil
	}}
	if !j.TakesReplyAhead() {
		t.Fatal("the files journal does not take a reply ahead")
	}
	ids, err := tr.Append(sessions.WithReplyAhead(ctx, ra), textMessage("assistant", text))
	if err != nil {
		t.Fatal(err)
	}
	rp, ok := ra.Taken()
	if ok && rp.EntryID != ids[0] {
		t.Fatalf("reply answers %q, the append wrote %q", rp.EntryID, ids[0])
	}
	return rp
}

// TestTranscriptLinesHeldByTheJournalSurviveAPowerLoss: a turn's answer
// made durable by its reply's journal line (no fsync of the transcript)
// is back in the transcript after a power loss took the transcript's
// unsynced bytes — cut off, zeroed, or cut mid-line — and the start still
// sends the reply. The first answer of a File is fsynced (its durable
// offset unknown); the ones after go through the journal.
func TestTranscriptLinesHeldByTheJournalSurviveAPowerLoss(t *testing.T) {
	for _, loss := range []string{"cut", "zeroed", "torn"} {
		t.Run(loss, func(t *testing.T) {
			verifyNoLeaks(t)
			dir := t.TempDir()
			m, err := Open(Options{StateDir: dir, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			sid := uuid.NewString()
			if rp := answerWithReply(t, m, sid, "r1", "first answer"); rp.ID != "" {
				t.Fatal("the first answer of a File was taken by the journal; its durable offset is unknown")
			}
			path := filepath.Join(dir, "agents", "main", "sessions", sid+".jsonl")
			durable := len(readFile(t, path))
			var taken []string
			for i, rec := range []string{"r2", "r3"} {
				rp := answerWithReply(t, m, sid, rec, "answer "+rec)
				if rp.ID == "" {
					t.Fatalf("answer %d not taken by the journal", i+2)
				}
				taken = append(taken, rp.ID)
			}
			full := readFile(t, path)
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}

			// The power loss: what was not fsynced is gone or damaged.
			switch loss {
			case "cut":
				must(t, os.Truncate(path, int64(durable)))
			case "zeroed":
				b := slices.Clone(full)
				clear(b[durable:])
				must(t, os.WriteFile(path, b, 0o600))
			case "torn":
				must(t, os.Truncate(path, int64(durable+(len(full)-durable)/2)))
			}

			m, err = Open(Options{StateDir: dir, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			reps, err := m.Journal().Replies()
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); !bytes.Equal(got, full) {
				t.Fatalf("transcript after the start:\n%s\nwant:\n%s", got, full)
			}
			var ids []string
			for _, rp := range reps {
				ids = append(ids, rp.ID)
			}
			if !slices.Equal(ids, taken) {
				t.Errorf("replies to send after the start %v, want %v", ids, taken)
			}
			tr, err := mustStore(t, m, "main").Transcript(sid)
			if err != nil {
				t.Fatal(err)
			}
			c, err := tr.Context(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n := len(c.Messages); n != 6 {
				t.Errorf("context holds %d messages after the start, want 6", n)
			}
		})
	}
}

// TestRewriteFsyncsTheTranscriptsItsLinesHold: a rewrite of the log drops
// the ready lines that hold transcript bytes, so it fsyncs those
// transcripts first; a transcript it cannot fsync keeps the old log.
func TestRewriteFsyncsTheTranscriptsItsLinesHold(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	sid := uuid.NewString()
	answerWithReply(t, m, sid, "r1", "first")
	if rp := answerWithReply(t, m, sid, "r2", "second"); rp.ID == "" {
		t.Fatal("answer not taken by the journal")
	}
	j := m.Journal()
	j.mu.Lock()
	held := slices.Collect(maps.Keys(j.tails))
	j.mu.Unlock()
	want := "agents/main/sessions/" + sid + ".jsonl"
	if !slices.Equal(held, []string{want}) {
		t.Fatalf("journal holds lines of %v, want [%s]", held, want)
	}
	var synced []string
	syncTail = func(path string) error {
		synced = append(synced, path)
		return os.ErrPermission
	}
	t.Cleanup(func() { syncTail = syncFileIfThere })
	j.mu.Lock()
	err := j.compactLocked()
	j.mu.Unlock()
	if err == nil {
		t.Fatal("rewrite went ahead though a transcript its lines hold could not be fsynced")
	}
	if !strings.Contains(string(readFile(t, j.path)), `"tail"`) {
		t.Error("the old log (with the lines) was not kept")
	}
	syncTail = func(path string) error {
		synced = append(synced, path)
		return syncFileIfThere(path)
	}
	j.mu.Lock()
	err = j.compactLocked()
	tails := len(j.tails)
	j.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, filepath.FromSlash(want))
	if !slices.Equal(synced, []string{abs, abs}) {
		t.Errorf("fsynced %v, want %s twice", synced, abs)
	}
	if tails != 0 || strings.Contains(string(readFile(t, j.path)), `"tail"`) {
		t.Error("the rewritten log still holds transcript lines")
	}
}

// TestReadyWithLinesRefusesAPathOutsideTheTranscripts: lines of a file
// that is not a transcript of this state directory are refused, nothing
// stored; a reply that ends a draft is too.
func TestReadyWithLinesRefusesAPathOutsideTheTranscripts(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	j := m.Journal()
	sid := uuid.NewString()
	for _, path := range []string{
		filepath.Join(t.TempDir(), "agents", "main", "sessions", sid+".jsonl"),
		filepath.Join(dir, "agents", "main", "sessions", "..", "..", "..", "ingress", "journal.jsonl"),
		filepath.Join(dir, "agents", "main", "sessions", "not-a-session.jsonl"),
		filepath.Join(dir, "agents", "Bad Agent", "sessions", sid+".jsonl"),
		filepath.Join(dir, "sessions.json"),
	} {
		if err := j.ReadyWithLines(sessions.Reply{ID: "rp", Chunks: []string{"x"}}, path, 0, []byte("{}\n")); err == nil {
			t.Errorf("ReadyWithLines(%s) stored", path)
		}
	}
	ok := filepath.Join(dir, "agents", "main", "sessions", sid+".jsonl")
	if err := j.ReadyWithLines(sessions.Reply{ID: "rp", Chunks: []string{"x"}, Draft: "d"}, ok, 0, []byte("{}\n")); err == nil {
		t.Error("ReadyWithLines stored a reply that ends a draft")
	}
	if reps, _ := j.Replies(); len(reps) != 0 {
		t.Errorf("replies stored: %v", reps)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
