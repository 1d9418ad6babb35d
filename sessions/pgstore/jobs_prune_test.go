package pgstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
)

var pruneT0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func pruneTestJob(id string, at time.Time) sessions.Job {
	return sessions.Job{ID: id, AgentID: "main", SessionKey: "agent:main:telegram:group:-100",
		Target: sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-100", ChatType: "group"},
		Text:   "reminder " + id, Schedule: sessions.JobSchedule{At: at},
		State: sessions.JobActive, NextAt: at, CreatedAt: at.Add(-time.Hour)}
}

// TestJobFireReadsNoEndedRows: a scheduler's poll (the claim and the
// next due time in one statement) reads the active jobs, not the 10,000
// ended ones beside them: rows read counted by pg_stat_xact_user_tables,
// with the planner's statistics gathered (ANALYZE).
func TestJobFireReadsNoEndedRows(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	s := db.Jobs()
	for i := range 3 {
		if err := s.AddJob(ctx, pruneTestJob(fmt.Sprintf("jlive%d", i), pruneT0.Add(time.Duration(i)*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO jobs (id, agent_id, session_key, chat_key, state, next_at, body, ended_at)
		SELECT 'jend' || i, 'main', 'agent:main:telegram:group:-100', 'telegram/default/-100', 'done',
			$1::timestamptz - i * interval '1 minute', '{}', $1::timestamptz - i * interval '1 minute'
		FROM generate_series(1, 10000) AS i`, pruneT0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sql  string
		args []any
	}{
		{"claim", claimDueJobsSQL, []any{pruneT0, "me", pruneT0.Add(time.Minute), 10}},
		{"job", `SELECT ` + jobCols + ` FROM jobs WHERE id = $1 FOR UPDATE`, []any{"jlive0"}},
	} {
		err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, c.sql, c.args...)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			var seq, idx int64
			if err := tx.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0), coalesce(idx_tup_fetch, 0)
				FROM pg_stat_xact_user_tables WHERE relname = 'jobs'`).Scan(&seq, &idx); err != nil {
				return err
			}
			if seq+idx > 20 {
				t.Errorf("%s (%d rows) read %d rows sequentially and %d through indexes, want the live jobs' few",
					c.name, n, seq, idx)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}

// TestMaintenanceForgetsOldEndedJobs: maintenance deletes the jobs that
// ended more than archiveRetention ago (30 days by default) and keeps the
// active ones and those that ended since; in warn mode it deletes none.
func TestMaintenanceForgetsOldEndedJobs(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	clk := &fakeClock{t: pruneT0}
	db.now = clk.now
	s := db.Jobs()
	end := func(at time.Time, id string, how func(id string) error) {
		clk.t = at
		if err := s.AddJob(ctx, pruneTestJob(id, at)); err != nil {
			t.Fatal(err)
		}
		if err := how(id); err != nil {
			t.Fatalf("ending %s: %v", id, err)
		}
	}
	fired := func(id string) error {
		js, _, err := s.ClaimDueJobs(ctx, clk.t, "me", time.Minute, 10)
		if err != nil || len(js) != 1 {
			return fmt.Errorf("claim: %v, %v", js, err)
		}
		return s.SettleJob(ctx, id, "me", sessions.JobSettle{Fired: clk.t, State: sessions.JobDone, NextAt: clk.t})
	}
	disabled := func(id string) error { return s.DisableJob(ctx, id, "bot left") }
	end(pruneT0, "jolddone", fired)
	end(pruneT0, "jolddisabled", disabled)
	end(pruneT0.Add(20*24*time.Hour), "jrecent", fired)
	if err := s.AddJob(ctx, pruneTestJob("jlive", pruneT0.Add(90*24*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if err := s.AddJob(ctx, pruneTestJob("jolder", pruneT0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE jobs SET state = 'done' WHERE id = 'jolder'`); err != nil { // as a gateway before 00028 ends it
		t.Fatal(err)
	}
	ids := func() string {
		js, err := s.ListJobs(ctx, sessions.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range js {
			out = append(out, j.ID)
		}
		return strings.Join(out, " ")
	}
	clk.t = pruneT0.Add(31 * 24 * time.Hour)
	backend := func(m sessions.Maintenance) *Backend {
		t.Helper()
		bdb, err := Open(ctx, Options{URL: url, Now: clk.now, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		b := NewBackend(bdb, BackendOptions{Maintenance: m, Passive: true})
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	warn := backend(sessions.Maintenance{Mode: sessions.MaintenanceWarn})
	if _, err := warn.MaintainAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "jolddisabled jolddone jolder jrecent jlive"; got != want {
		t.Errorf("after maintenance in warn mode: %s, want %s", got, want)
	}
	b := backend(sessions.Maintenance{})
	if _, err := b.MaintainAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "jolder jrecent jlive"; got != want {
		t.Errorf("31 days after the first ended: %s, want %s (jolder's end unknown: kept from now)", got, want)
	}
	clk.t = pruneT0.Add(62 * 24 * time.Hour)
	if _, err := b.MaintainAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "jlive"; got != want {
		t.Errorf("62 days after the first ended: %s, want %s", got, want)
	}
	if err := s.AddJob(ctx, pruneTestJob("jolddone", clk.t)); err != nil {
		t.Errorf("AddJob of a forgotten job's id: %v", err)
	}
}
