package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// BenchmarkSearch runs the files benchmark's queries on PostgreSQL:
// GATEWAY_SEARCH_BENCH_MESSAGES messages (default 100000), 100 per session,
// Zipf-distributed made-up words, copied in through the search trigger.
func BenchmarkSearch(b *testing.B) {
	n := 100000
	if s := os.Getenv("GATEWAY_SEARCH_BENCH_MESSAGES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 100 {
			b.Fatalf("GATEWAY_SEARCH_BENCH_MESSAGES=%q: want a number >= 100", s)
		}
		n = v
	}
	ctx := context.Background()
	db, err := Open(ctx, Options{URL: pgtest.NewDatabase(b), MaxConns: 4, StatementTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(7, 1))
	words := make([]string, 20000)
	for i := range words {
		var sb strings.Builder
		for range 3 + r.IntN(7) {
			sb.WriteByte(byte('a' + r.IntN(26)))
		}
		words[i] = sb.String() + strconv.Itoa(i%10)
	}
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(words)-1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	var ents, rows [][]any
	for s := range n / 100 {
		sid := uuid.NewString()
		key := fmt.Sprintf("agent:main:telegram:group:%d", -1000000-s)
		ents = append(ents, []any{"main", key, sid, base, base, base, base})
		for i := range 100 {
			at := base.Add(time.Duration(s*100+i) * time.Second)
			var sb strings.Builder
			for j := range 5 + r.IntN(35) {
				if j > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(words[zipf.Uint64()])
			}
			role := sessions.RoleUser
			if i%2 == 1 {
				role = sessions.RoleAssistant
			}
			body, _ := json.Marshal(map[string]any{"type": "message", "id": fmt.Sprintf("%08x", i+1),
				"message": map[string]any{"role": role, "timestamp": at.UnixMilli(),
					"content": []map[string]string{{"type": "text", "text": sb.String()}}}})
			rows = append(rows, []any{sid, int64(i + 1), fmt.Sprintf("%08x", i+1), "message", string(body), at})
		}
	}
	if _, err := db.pool.CopyFrom(ctx, pgx.Identifier{"entries"},
		[]string{"agent_id", "session_key", "session_id", "created_at", "session_started_at", "last_interaction_at", "updated_at"},
		pgx.CopyFromRows(ents)); err != nil {
		b.Fatal(err)
	}
	copyStart := time.Now()
	if _, err := db.pool.CopyFrom(ctx, pgx.Identifier{"transcript_entries"},
		[]string{"session_id", "seq", "id", "type", "body", "created_at"}, pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	copied := time.Since(copyStart)
	if _, err := db.pool.Exec(ctx, "ANALYZE transcript_entries"); err != nil {
		b.Fatal(err)
	}
	var size int64
	if err := db.pool.QueryRow(ctx, `SELECT pg_relation_size('transcript_entries_search')`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d messages loaded in %v (copy through the trigger %v, %.1f µs/message); GIN index %.1f MB",
		n, time.Since(start), copied, float64(copied.Microseconds())/float64(n), float64(size)/1e6)
	queries := []struct {
		name string
		q    sessions.SearchQuery
	}{
		{"rare word", sessions.SearchQuery{Text: words[5000]}},
		{"common word", sessions.SearchQuery{Text: words[1]}},
		{"two words", sessions.SearchQuery{Text: words[10] + " " + words[100]}},
		{"three common words", sessions.SearchQuery{Text: words[1] + " " + words[2] + " " + words[3]}},
		{"room", sessions.SearchQuery{Text: words[50], Room: "-1000007"}},
		{"absent word", sessions.SearchQuery{Text: "zzzzqqq"}},
	}
	s := db.Search()
	for _, qc := range queries {
		b.Run(qc.name, func(b *testing.B) {
			var hits int
			for b.Loop() {
				h, err := s.Search(ctx, qc.q)
				if err != nil {
					b.Fatal(err)
				}
				hits = len(h)
			}
			b.ReportMetric(float64(hits), "hits")
		})
	}
}
