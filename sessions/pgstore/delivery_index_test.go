package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPendingSetReadersUseAnIndex: migration 00030 dropped
// delivery_records_pending (seq); the statements that read the pending
// set find it through delivery_records_session_pending instead of reading
// the day of done records beside it (50,000 here, 300 pending), and the
// turn's gate still finds one session's records by its columns.
func TestPendingSetReadersUseAnIndex(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	if _, err := db.pool.Exec(ctx, `INSERT INTO delivery_records (id, seq, state, agent_id, session_key, accepted_at, owner, done_at, done_seq)
		SELECT 'd' || g, nextval('delivery_seq'), 'done', 'main', 'agent:main:telegram:group:' || (g % 500),
			$1::timestamptz - interval '1 day' + g * interval '1 s', 'o' || (g % 3), $1::timestamptz, g
		FROM generate_series(1, 50000) g`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO delivery_records (id, seq, agent_id, session_key, payload, accepted_at, owner, lease_until)
		SELECT 'p' || g, nextval('delivery_seq'), 'main', 'agent:main:telegram:group:' || (g % 100), '{}',
			$1::timestamptz, 'o' || (g % 3), $1::timestamptz + interval '1 minute'
		FROM generate_series(1, 300) g`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `ANALYZE delivery_records`); err != nil {
		t.Fatal(err)
	}
	const index = "delivery_records_session_pending"
	check := func(name, plan string) {
		t.Helper()
		if strings.Contains(plan, "Seq Scan on delivery_records") || !strings.Contains(plan, index) {
			t.Errorf("%s reads the pending records without %s:\n%s", name, index, plan)
		}
	}
	for _, c := range []struct {
		name string
		sql  string
		args []any
	}{
		{"claim", claimRecordsSQL, []any{"o1", 10, now}},
		{"release", releaseRecordsSQL, []any{"o1", now}},
		{"prune owners", pruneOwnersSQL, []any{now}},
		{"stats", journalStatsSQL, nil},
		{"doctor backlog", checkBacklogSQL, nil},
		{"replica status", replicaStatusSQL, []any{"r1", SessionLease("")}},
	} {
		check(c.name, explain(t, db.pool, `EXPLAIN `+c.sql, c.args...))
	}
	// The turn's statement runs on the group commit's connections, with
	// its generic plan (writegroup_pools.go).
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE gate AS ` + beginTurnSQL} {
		if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	plan := explain(t, conn, `EXPLAIN EXECUTE gate('main', 'agent:main:telegram:group:7', '{p7}', 'o1',
		'session:agent:main:telegram:group:7', 'r1/o1', 60000000, 9223372036854775807, true)`)
	check("turn gate", plan)
	if !strings.Contains(plan, "Index Cond: ((agent_id = $1) AND (session_key = $2)") {
		t.Errorf("turn gate does not find the session's records by its columns:\n%s", plan)
	}
	if _, err := conn.Exec(ctx, `DEALLOCATE gate; RESET plan_cache_mode`, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
}

// explain is the plan EXPLAIN q prints, as one text.
func explain(t *testing.T, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(lines, "\n")
}
