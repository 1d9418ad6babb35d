package pgstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/transcript"
)

const (
	sidA = "4f7c2a9e-0000-4000-8000-00000000000a"
	sidB = "4f7c2a9e-0000-4000-8000-00000000000b"
)

func text(role, s string) sessions.Message {
	return sessions.Message{Role: role, Content: []sessions.Content{{Type: sessions.BlockText, Text: s}}, Timestamp: 1700000000000}
}

// fillLog appends a turn with a tool call, a compaction and more to tr.
func fillLog(t *testing.T, tr sessions.TranscriptLog) {
	t.Helper()
	ctx := ctxT(t)
	call := sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockToolCall,
		ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)}}}
	res := sessions.Message{Role: sessions.RoleToolResult, ToolCallID: "call_1", ToolName: "read",
		Content: []sessions.Content{{Type: sessions.BlockText, Text: "package a <&>"}}}
	user := text(sessions.RoleUser, "what is in a.go? \u2028 \x00")
	user.RecordIDs, user.HistorySeq = []string{"r1"}, 3
	ids, err := tr.Append(ctx, user, call, res, text(sessions.RoleAssistant, "a package"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "asked about a.go", FirstKeptEntryID: ids[3],
		TokensBefore: 900, TokensAfter: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, text(sessions.RoleUser, "thanks")); err != nil {
		t.Fatal(err)
	}
}

// The rows of a transcript, one per line, are a JSONL file the files
// backend (and pi) loads with the same context and history: moving a
// session from PostgreSQL to files loses nothing.
func TestTranscriptRowsAreTheFilesLines(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	tr, err := db.Transcript(sidA, transcript.Header{SessionKey: "agent:main:main", AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	fillLog(t, tr)
	rows, err := db.Load(ctx, sidA, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Type != TypeSession || rows[0].ID != sidA || !strings.Contains(string(rows[0].Body), `"sessionKey":"agent:main:main"`) {
		t.Fatalf("first row is not the session header: %s", rows[0].Body)
	}
	var file bytes.Buffer
	for _, r := range rows {
		file.Write(r.Body)
		file.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), sidA+".jsonl")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := transcript.LoadFile(path, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("context of the rows as a file (-postgres +files):\n%s", diff)
	}
	wantH, err := tr.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gotH, err := transcript.ReadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantH, gotH); diff != "" {
		t.Errorf("history of the rows as a file (-postgres +files):\n%s", diff)
	}
}

// A transcript the files backend wrote, copied line by line into rows, has
// the same context, and appending continues its chain: moving a session
// from files to PostgreSQL loses nothing.
func TestFilesLinesAsRows(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	m, err := filestore.Open(filestore.Options{StateDir: t.TempDir(), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st, err := m.Backend().Store("main")
	if err != nil {
		t.Fatal(err)
	}
	ftr, err := st.Transcript(sidB)
	if err != nil {
		t.Fatal(err)
	}
	fillLog(t, ftr)
	ft, err := filestore.StoreOf(st).Transcript(sidB)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ft.Path())
	if err != nil {
		t.Fatal(err)
	}
	var rows []TranscriptEntry
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var head struct {
			Type     string  `json:"type"`
			ID       string  `json:"id"`
			ParentID *string `json:"parentId"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			t.Fatal(err)
		}
		e := TranscriptEntry{ID: head.ID, Type: head.Type, Body: line}
		if head.ParentID != nil {
			e.ParentID = *head.ParentID
		}
		rows = append(rows, e)
	}
	if _, err := db.Append(ctx, sidB, rows...); err != nil {
		t.Fatal(err)
	}
	moved, err := db.Transcript(sidB, transcript.Header{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ftr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := moved.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("context of the file as rows (-files +postgres):\n%s", diff)
	}
	stored, err := db.Load(ctx, sidB, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range stored {
		if !bytes.Equal(r.Body, rows[i].Body) {
			t.Errorf("row %d: body %s, want the line byte for byte: %s", i, r.Body, rows[i].Body)
		}
	}
	if n, pos, err := moved.Stats(ctx); err != nil || n != 5 || pos != 6 {
		t.Errorf("Stats of the moved transcript = %d, %d, %v; want 5 messages, compaction at seq 6", n, pos, err)
	}
	ids, err := moved.Append(ctx, text(sessions.RoleAssistant, "you are welcome"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := moved.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.LeafID != ids[0] || len(after.Messages) != len(want.Messages)+1 {
		t.Errorf("append after the move: leaf %q (want %q), %d messages (want %d)", after.LeafID, ids[0],
			len(after.Messages), len(want.Messages)+1)
	}
	last, err := db.Load(ctx, sidB, int64(len(rows)+1))
	if err != nil || len(last) != 1 || last[0].ParentID != want.LeafID {
		t.Errorf("the appended entry's parent is %+v (%v), want the file's leaf %q", last, err, want.LeafID)
	}
}

// Context reads from the latest compaction on: an unreadable entry before
// the first kept one is never read (History, which reads everything,
// reports it).
func TestContextSkipsWhatPrecedesTheCompaction(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	tr, err := db.Transcript(sidA, transcript.Header{AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 40 {
		m := text(sessions.RoleUser, "question")
		if i%2 == 1 {
			m = text(sessions.RoleAssistant, "answer")
		}
		got, err := tr.Append(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: ids[35]}); err != nil {
		t.Fatal(err)
	}
	// Damage an early entry (seq 3: the header is seq 1).
	if _, err := db.pool.Exec(ctx, `UPDATE transcript_entries SET body = '{"type":"message"}' WHERE session_id = $1 AND seq = 3`, sidA); err != nil {
		t.Fatal(err)
	}
	c, err := tr.Context(ctx)
	if err != nil {
		t.Fatalf("Context read the damaged entry before the compaction: %v", err)
	}
	if len(c.Messages) != 1+5 || c.EntryIDs[1] != ids[35] {
		t.Errorf("Context: %d messages from %v, want the summary and 5 from %s", len(c.Messages), c.EntryIDs, ids[35])
	}
	if _, err := tr.History(ctx); err == nil || !strings.Contains(err.Error(), "entry at 3") {
		t.Errorf("History of a damaged transcript: %v, want the bad entry named", err)
	}
}

// Each body is the line the files backend writes for the same entry: the
// encoder's bytes with the parent spliced in, nothing re-encoded.
func TestBodiesAreTheFilesBytes(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	tr, err := db.Transcript(sidA, transcript.Header{AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []sessions.Message{text(sessions.RoleUser, "one <&> \u2028 \x00 \xff"), text(sessions.RoleAssistant, "two")}
	msgs[0].RecordIDs, msgs[0].HistorySeq = []string{"r1", "r2"}, 7
	if _, err := tr.Append(ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, msgs[1]); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Load(ctx, sidA, 2)
	if err != nil || len(rows) != 2 {
		t.Fatalf("Load: %d rows, %v", len(rows), err)
	}
	for i, r := range rows {
		var stamp struct {
			Timestamp string `json:"timestamp"`
		}
		if err := json.Unmarshal(r.Body, &stamp); err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, stamp.Timestamp)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := transcript.EncodeMessage(r.ID, r.ParentID, msgs[i], at)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Body, want) {
			t.Errorf("row %d:\n got %s\nwant %s", i, r.Body, want)
		}
	}
	if rows[1].ParentID != rows[0].ID {
		t.Errorf("second entry's parent %q, want %q", rows[1].ParentID, rows[0].ID)
	}
}

// Transcript(id) of another agent's session is refused, as the files
// backend (a directory per agent) never finds it.
func TestTranscriptOfAnotherAgent(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	mine, theirs := db.Store("main", nil), db.Store("other", nil)
	k := mustKey(t, "main", "telegram", "-100")
	e, _, err := mine.Begin(ctx, k, sessions.Origin{Channel: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := mine.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, text(sessions.RoleUser, "private")); err != nil {
		t.Fatal(err)
	}
	if _, err := theirs.Transcript(e.SessionID); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("another agent's Transcript(%s): %v, want ErrNotFound", e.SessionID, err)
	}
	if _, err := mine.Reset(ctx, k, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	old, err := mine.Transcript(e.SessionID)
	if err != nil {
		t.Fatalf("own archived transcript: %v", err)
	}
	if h, err := old.History(ctx); err != nil || len(h) != 1 {
		t.Errorf("own archived history: %d messages, %v", len(h), err)
	}
}
