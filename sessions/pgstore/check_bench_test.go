package pgstore

import (
	"context"
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// BenchmarkCheck runs Check over 100,000 sessions of 10 messages each
// (1.1 million transcript rows), all consistent: what gateway doctor
// costs on a large database. The rows are made by SQL, not through the
// appends, which would take minutes.
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, Options{URL: pgtest.NewDatabase(b), MaxConns: 4, StatementTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`INSERT INTO entries (agent_id, session_key, session_id, created_at, session_started_at,
			last_interaction_at, updated_at, message_count)
		SELECT 'main', 'agent:main:web:direct:' || g, gen_random_uuid()::text, now(), now(), now(), now(), 10
		FROM generate_series(1, 100000) g`,
		`INSERT INTO transcript_entries (session_id, seq, id, type, body, created_at)
		SELECT e.session_id, s, 'e' || s, CASE WHEN s = 1 THEN 'session' ELSE 'message' END,
			'{"type":"message","message":{"role":"toolResult","content":"a sentence or two of a tool result"}}', now()
		FROM entries e, generate_series(1, 11) s`,
		`INSERT INTO transcript_heads (session_id, last_seq, leaf_id, prev_leaf_id, messages)
		SELECT session_id, 11, 'e11', '', 10 FROM entries`,
		`ANALYZE`,
	} {
		if _, err := db.pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		ps, err := db.Check(ctx, sessions.CheckOptions{})
		if err != nil || len(ps) != 0 {
			b.Fatalf("Check = %+v, %v; want no problem", ps, err)
		}
	}
}
