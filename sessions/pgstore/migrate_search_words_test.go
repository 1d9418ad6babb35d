package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/searchtext"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// searchMatches reports which of the rows of session s match the query
// words, by seq.
func searchMatches(t *testing.T, db *DB, session, query string) []int64 {
	t.Helper()
	rows, err := db.pool.Query(context.Background(), `SELECT seq FROM transcript_entries
		WHERE session_id = $1 AND search @@ $2::tsquery ORDER BY seq`, session, searchQuery(searchtext.Tokens(query)))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		out = append(out, seq)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSearchWordsMigrationReindexesOldRows: rows indexed before 00027 (the
// text-search parser's words: an address, a path, a run of Chinese text
// whole) are found by their searchtext words after it, in batches smaller
// than the table; rows not searchable stay so; running it again changes
// nothing; its Down and Up apply.
func TestSearchWordsMigrationReindexesOldRows(t *testing.T) {
	db, _ := openTest(t)
	ctx := context.Background()
	texts := []string{"mail foo@example.com", "cat /etc/passwd", "这是会话存储", "v1.2.3 out", "plain words"}
	for i, txt := range texts {
		body := fmt.Sprintf(`{"type":"message","message":{"role":"user","content":%q,"timestamp":1700000000000}}`, txt)
		_, err := db.pool.Exec(ctx, `INSERT INTO transcript_entries (session_id, seq, id, type, body, created_at,
			search, search_role, search_at) VALUES ('old', $1, $2, 'message', $3::json, now(),
			to_tsvector('simple', $4::text), 'user', now())`, i+1, fmt.Sprint("e", i), body, txt)
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO transcript_entries (session_id, seq, id, type, body, created_at, search_role)
		VALUES ('old', 6, 'tool', 'message', '{"message":{"role":"toolResult","content":"example"}}', now(), '')`)
	if err != nil {
		t.Fatal(err)
	}
	if got := searchMatches(t, db, "old", "example"); got != nil {
		t.Fatalf("before the re-index, example matches %v: the fixture is not the parser's words", got)
	}
	defer func(n int) { searchReindexBatch = n }(searchReindexBatch)
	searchReindexBatch = 2
	sqldb := stdlib.OpenDBFromPool(db.pool)
	defer sqldb.Close()
	check := func(when string) {
		t.Helper()
		for q, want := range map[string][]int64{"example": {1}, "foo": {1}, "passwd": {2}, "会话": {3},
			"存储": {3}, "v1": {4}, "plain words": {5}, "cat passwd": {2}, "会存": nil} {
			if got := searchMatches(t, db, "old", q); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %q matches %v, want %v", when, q, got, want)
			}
		}
	}
	if err := searchWordsUp(ctx, sqldb); err != nil {
		t.Fatal(err)
	}
	check("after the re-index")
	if err := searchWordsUp(ctx, sqldb); err != nil {
		t.Fatal(err)
	}
	check("after a second run")

	p, done, err := db.provider()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, err := p.Down(ctx); err != nil {
		t.Fatalf("down: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	check("after down and up")
}

// TestSearchWordsOnEveryWritePath: rows the daemon writes carry
// searchtext's words whichever statement writes them — the chain append
// of a message whose role and time are left to the trigger (a NUL in its
// text) and Append, which leaves role and time of every row to it — while
// a row of another writer, without words, is still indexed by the
// trigger.
func TestSearchWordsOnEveryWritePath(t *testing.T) {
	pgtest.AdminURL(t)
	var c conformanceStores
	st := c.open(t, sessionstest.Options{})
	db := st.x.db
	ctx := context.Background()
	body := `{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"ping foo@example.com 会话存储"}}`
	if _, err := db.Append(ctx, "app", TranscriptEntry{ID: "a1", Type: TypeMessage, Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	if got := searchMatches(t, db, "app", "example 话存"); fmt.Sprint(got) != "[1]" {
		t.Errorf("Append: example 话存 matches %v, want [1]", got)
	}

	k, err := routing.PeerKey("main", "telegram", "", routing.Direct, "1")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Begin(ctx, k, sessions.Origin{At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, sessions.UserText("deploy.sh\x00会话存储", time.Now())); err != nil {
		t.Fatal(err)
	}
	hits, err := db.Search().Search(ctx, sessions.SearchQuery{Text: "deploy 存储"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Role != sessions.RoleUser {
		t.Errorf("chain append left to the trigger: hits %+v, want the user message", hits)
	}

	_, err = db.pool.Exec(ctx, `INSERT INTO transcript_entries (session_id, seq, id, type, body, created_at)
		VALUES ('other', 1, 'o1', 'message', '{"message":{"role":"user","content":"other writer"}}', now())`)
	if err != nil {
		t.Fatal(err)
	}
	if got := searchMatches(t, db, "other", "writer"); fmt.Sprint(got) != "[1]" {
		t.Errorf("another writer's row: writer matches %v, want [1]", got)
	}
}
