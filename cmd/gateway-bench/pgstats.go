package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgStats is what the bench database cost: transactions committed and
// rows written (start-up included), the CPU time of the server processes
// serving it since they started (cpu, start-up included: the migrations of
// a fresh database cost about 0.5 s of it), and their CPU during the run
// alone (run), split into user and system time.
type pgStats struct {
	commits, rows int64
	cpu           time.Duration
	run           procCPU
}

// serverProcs reads the CPU time so far of the server processes connected
// to the database of dbURL (the daemons' connections), by pid; read it
// before the daemons exit, while their connections are open. It is nil
// when the server cannot be asked.
func serverProcs(ctx context.Context, dbURL string) map[int]procCPU {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := make(map[int]procCPU, len(pids))
	for _, pid := range pids {
		out[int(pid)] = procTimes(int(pid))
	}
	return out
}

// serverCPU is what the server processes of after used since before (a
// process not in before since it started), and in all.
func serverCPU(before, after map[int]procCPU) (run procCPU, total time.Duration) {
	for pid, a := range after {
		b := before[pid]
		run.user += a.user - b.user
		run.sys += a.sys - b.sys
		total += a.user + a.sys
	}
	return run, total
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
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	return fmt.Sprintf("db_commits_per_msg=%.2f db_rows_written_per_msg=%.2f (start-up included)\n"+
		"db_server_cpu_per_msg=%.3f ms (run: user %.3f + sys %.3f) db_server_cpu_with_startup_per_msg=%.3f ms",
		float64(s.commits)/float64(n), float64(s.rows)/float64(n),
		ms(s.run.user+s.run.sys), ms(s.run.user), ms(s.run.sys), ms(s.cpu))
}
