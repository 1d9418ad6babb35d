package sqlitestore

import (
	"context"
	"database/sql"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/searchtext"
	"github.com/gateway/gateway/sessions/transcript"
)

// Deleting a transcript (an archive past retention, storage migrate
// replacing a transcript on import) is one writer job per transcript:
// each of its statements must find the transcript's rows through an
// index, never read a whole table (the search index holds a row per word
// of every message: a scan per deleted transcript held the writer, and so
// every write, for minutes on a large database, and made an import into
// SQLite quadratic). The test runs deleteTranscript on a transcript with
// messages, then asks SQLite for the plan of every statement the writer
// ran and kept prepared.
func TestDeleteTranscriptScansNoTable(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	st := db.Store("main", nil)
	key, err := routing.Parse("agent:main:telegram:direct:42")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", ChatType: "direct", To: "42"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := tr.Append(ctx, sessions.UserText("apples and pears", now), sessions.Message{Role: sessions.RoleAssistant,
		Content: []sessions.Content{{Type: sessions.BlockText, Text: "pears are sweet"}}, Timestamp: now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	count := func(table string) int {
		t.Helper()
		var n int
		if err := db.read.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count("search_terms") == 0 {
		t.Fatal("the messages were not indexed")
	}
	if err := db.w.do(ctx, func(tx *wtx) error { return deleteTranscript(tx, e.SessionID) }); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"transcript_entries", "transcript_heads", "search_docs", "search_terms"} {
		if n := count(table); n != 0 {
			t.Errorf("%s: %d rows left", table, n)
		}
	}
	numbered := regexp.MustCompile(`\?(\d+)`)
	for q := range db.w.stmts.stmts { // settled: the writer prepared them before it answered
		if !strings.HasPrefix(q, "DELETE") && !strings.HasPrefix(q, "SELECT") {
			continue
		}
		n := strings.Count(q, "?")
		if m := numbered.FindAllStringSubmatch(q, -1); m != nil {
			n = 0
			for _, g := range m {
				v, _ := strconv.Atoi(g[1])
				n = max(n, v)
			}
		}
		args := make([]any, n)
		for i := range args {
			args[i] = "x"
		}
		rows, err := db.read.Query(`EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			t.Fatalf("plan of %q: %v", q, err)
		}
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(detail, "SCAN ") && !strings.HasPrefix(detail, "SCAN json_each") &&
				!strings.HasPrefix(detail, "SCAN CONSTANT ROW") {
				t.Errorf("%q reads a whole table: %s", q, detail)
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Importing a key again replaces its transcript's search rows with the
// new lines' words: none of the old words is left to be found.
func TestImportAgainReplacesSearchRows(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	key, err := routing.Parse("agent:main:telegram:direct:42")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	e := sessions.NewEntry(key, sessions.Origin{At: now}, now)
	lines := func(text string) [][]byte {
		hdr, err := transcript.EncodeHeader(e.SessionID, transcript.Header{SessionKey: key.String(), AgentID: "main"}, now)
		if err != nil {
			t.Fatal(err)
		}
		msg, _, err := transcript.EncodeMessage("m1", e.SessionID, sessions.UserText(text, now), now)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{hdr, msg}
	}
	for _, text := range []string{"apples grow on trees", "pears only"} {
		k := sessions.KeyCopy{KeyState: sessions.KeyState{Key: key.String(), Entry: &e},
			Transcripts: map[string][][]byte{e.SessionID: lines(text)}}
		if err := db.Transfer().ImportKey(ctx, "main", k); err != nil {
			t.Fatal(err)
		}
	}
	var terms []string
	err = db.query(ctx, func(r *sql.Rows) error {
		var w string
		terms = append(terms, w)
		return r.Scan(&terms[len(terms)-1])
	}, `SELECT token FROM search_terms ORDER BY token`)
	if err != nil {
		t.Fatal(err)
	}
	if want := searchtext.Tokens("pears only"); !slices.Equal(terms, slices.Sorted(slices.Values(want))) {
		t.Errorf("search rows %q, want the new line's words %q only", terms, want)
	}
	hits, err := db.Search().Search(ctx, sessions.SearchQuery{Text: "apples"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Errorf("an old word still finds %d messages", len(hits))
	}
}

// Expiring archives is one writer job per archive, not one for all of
// them: a round that forgets thousands of long transcripts (the first
// round of a large database, a shorter archiveRetention) held the writer,
// and so every accept, append and mark queued behind it, for the whole
// round (about 3 s for 200 transcripts of 200 messages on a test
// machine). Counted here as the commits the round makes, each releasing
// the writer to the writes queued meanwhile.
func TestExpireArchivesReleasesWriterBetweenArchives(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	const n = 4
	var want []string
	for i := range n {
		id := "00000000-0000-4000-8000-00000000000" + strconv.Itoa(i)
		want = append(want, id)
		tr, err := db.Transcript(id, transcript.Header{AgentID: "main"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Append(ctx, sessions.Message{Role: sessions.RoleUser,
			Content: []sessions.Content{{Type: sessions.BlockText, Text: "words to forget " + id}}}); err != nil {
			t.Fatal(err)
		}
		if err := db.w.do(ctx, func(tx *wtx) error {
			_, err := tx.Exec(`INSERT INTO archived (agent_id, session_key, session_id, reason, archived_at,
				session_started_at, updated_at) VALUES ('main', 'agent:main:web:direct:p', ?, 'reset', 1, 1, 1)`, id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	before := db.w.commits.Load()
	got, err := db.Store("main", nil).expireArchives(ctx, time.Now().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("expired %v, want %v", got, want)
	}
	if c := db.w.commits.Load() - before; c < n {
		t.Errorf("%d archives expired in %d commits: the writer was held for several at once", n, c)
	}
	var rows int
	if err := db.read.QueryRow(`SELECT (SELECT count(*) FROM transcript_entries) + (SELECT count(*) FROM search_terms)
		+ (SELECT count(*) FROM archived)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("%d rows of the expired sessions left", rows)
	}
}
