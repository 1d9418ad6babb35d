package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgStats is what the bench database cost: transactions committed, rows
// written, and the CPU time of the server processes serving it.
type pgStats struct {
	commits, rows int64
	cpu           time.Duration
}

// serverCPU sums the CPU time of the server processes connected to the
// database of dbURL (the daemon's pool) so far; call it before the daemon
// exits, while its connections are open.
func serverCPU(ctx context.Context, dbURL string) time.Duration {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return 0
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, pid := range pids {
		total += cpuTime(int(pid))
	}
	return total
}

// dbCounters reads the database's commit and row-write counters. Server
// processes report them when they go idle or exit, so read them after the
// daemon has exited for a complete count (startup included).
func dbCounters(ctx context.Context, dbURL string) (commits, rows int64, err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	// The exited daemon's backends flush their counters as they exit:
	// give them a moment.
	time.Sleep(500 * time.Millisecond)
	err = conn.QueryRow(ctx, `SELECT xact_commit, tup_inserted + tup_updated + tup_deleted
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&commits, &rows)
	return commits, rows, err
}

// perMessage renders s per message of n.
func (s pgStats) perMessage(n int) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("db_commits_per_msg=%.2f db_rows_written_per_msg=%.2f db_server_cpu_per_msg=%.3f ms",
		float64(s.commits)/float64(n), float64(s.rows)/float64(n), float64(s.cpu.Microseconds())/1000/float64(n))
}
