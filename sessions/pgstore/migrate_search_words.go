package pgstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"
)

// Migration 00027 (search words) is a Go migration: its re-index needs
// searchtext.Tokens (pairs of CJK characters, Go's letters and digits),
// which SQL cannot compute. Up first has the search trigger keep the
// words a writer gives (search_tokens.go): the daemon now gives them for
// every message row it writes; the trigger still decides role and time
// of rows written without them (Append, the import, bodies the daemon
// leaves to it) and indexes PostgreSQL's own words only for rows of other
// writers that give none. Then it rewrites the search column of every
// searchable row from its body, in batches of searchReindexBatch rows
// each committed alone (keyset on the primary key: no long transaction,
// no table lock; one read and one GIN update per message, a few seconds
// per 100,000 messages, at the first start of this version, under the
// migration lock). A crash midway leaves the version unrecorded: the next
// start redoes it from the beginning (rewriting a row is idempotent).
// Down restores the trigger of 00009; the words stay (plainto_tsquery
// still finds whole words in them).
const searchWordsVersion = 27

// searchReindexBatch is the rows re-indexed per transaction (a variable
// for the test of batches).
var searchReindexBatch = 1000

func searchWordsMigration() *goose.Migration {
	return goose.NewGoMigration(searchWordsVersion,
		&goose.GoFunc{RunDB: searchWordsUp},
		&goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error {
			if _, err := db.ExecContext(ctx, searchFillSQL("to_tsvector('simple', r.txt)", "")); err != nil {
				return fmt.Errorf("search words down: %w", err)
			}
			return nil
		}})
}

// searchFillSQL is gateway_search_fill with search as the words of a
// searchable row and otherwise the statements of a row that is not.
func searchFillSQL(search, notSearchable string) string {
	return `CREATE OR REPLACE FUNCTION gateway_search_fill() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF NEW.type = 'message' THEN
        r := gateway_search_row(NEW.body);
        IF r.role IN ('user', 'assistant') AND COALESCE(r.txt, '') <> '' THEN
            NEW.search := ` + search + `;
            NEW.search_role := r.role;
            NEW.search_at := COALESCE(to_timestamp(r.at_ms / 1000.0), NEW.created_at);
        ELSE` + notSearchable + `
        END IF;
    END IF;
    RETURN NEW;
END
$$`
}

func searchWordsUp(ctx context.Context, db *sql.DB) error {
	fill := searchFillSQL("COALESCE(NEW.search, to_tsvector('simple', r.txt))",
		"\n            NEW.search := NULL;\n            NEW.search_at := NULL;")
	if _, err := db.ExecContext(ctx, fill); err != nil {
		return fmt.Errorf("search words: trigger: %w", err)
	}
	var (
		sid  string
		seq  int64
		done int
	)
	for {
		n, lastSID, lastSeq, err := reindexSearchBatch(ctx, db, sid, seq)
		if err != nil {
			return fmt.Errorf("search words: re-index after %d rows: %w", done, err)
		}
		if n == 0 {
			return nil
		}
		done += n
		sid, seq = lastSID, lastSeq
	}
}

// reindexSearchBatch rewrites the words of the next searchReindexBatch
// searchable rows after (sid, seq) and returns how many it read and the
// key of the last.
func reindexSearchBatch(ctx context.Context, db *sql.DB, sid string, seq int64) (int, string, int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT session_id, seq, body::text FROM transcript_entries
		WHERE (session_id, seq) > ($1, $2) AND search IS NOT NULL
		ORDER BY session_id, seq LIMIT $3`, sid, seq, searchReindexBatch)
	if err != nil {
		return 0, "", 0, err
	}
	var (
		sids  []string
		seqs  []int64
		words []string
		n     int
	)
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&sid, &seq, &body); err != nil {
			rows.Close()
			return 0, "", 0, err
		}
		n++
		// A body this cannot read keeps the words the trigger gave it.
		if w := bodySearchWords(TypeMessage, body); w != nil {
			sids, seqs, words = append(sids, sid), append(seqs, seq), append(words, *w)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, "", 0, err
	}
	if len(sids) > 0 {
		_, err = db.ExecContext(ctx, `UPDATE transcript_entries t
			SET search = array_to_tsvector(string_to_array(u.words, ' '))
			FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(sid, seq, words)
			WHERE t.session_id = u.sid AND t.seq = u.seq AND t.search IS NOT NULL`, sids, seqs, words)
		if err != nil {
			return 0, "", 0, err
		}
	}
	return n, sid, seq, nil
}
