package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestJobFireReadsNoEndedRows: the statements of a scheduler's poll read
// the active jobs only (the partial index jobs_due) or one job by its
// key, never the ended rows, even with 10,000 of them and the planner's
// statistics gathered (ANALYZE).
func TestJobFireReadsNoEndedRows(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), FileName), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := db.Jobs()
	for i := range 3 {
		if err := s.AddJob(ctx, pruneTestJob(fmt.Sprintf("jlive%d", i), pruneT0.Add(time.Duration(i)*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	err = db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
			INSERT INTO jobs (id, agent_id, session_key, chat_key, state, next_at, body, ended_at)
			SELECT 'jend' || i, 'main', 'agent:main:telegram:group:-100', 'telegram/default/-100', 'done', ?1 + i, '{}', ?1 + i FROM n`,
			toNanos(pruneT0))
		if err != nil {
			return err
		}
		_, err = tx.Exec(`ANALYZE`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{claimJobsSQL, nextJobSQL, `SELECT ` + jobCols + ` FROM jobs WHERE id = ?`} {
		rows, err := db.read.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, toNanos(pruneT0), "me", toNanos(pruneT0), 10)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		_ = rows.Close()
		for _, d := range plan {
			if strings.Contains(d, " jobs") && !strings.Contains(d, "USING INDEX jobs_due") && !strings.Contains(d, "USING PRIMARY KEY") {
				t.Errorf("a poll's statement reads ended rows (%q):\n%s\nplan: %s", d, q, strings.Join(plan, "; "))
			}
		}
	}
}

// TestMaintenanceForgetsOldEndedJobs: maintenance deletes the jobs that
// ended more than archiveRetention ago (30 days by default) and keeps the
// active ones and those that ended since; in warn mode it deletes none.
func TestMaintenanceForgetsOldEndedJobs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	now := pruneT0
	open := func(m sessions.Maintenance) *Backend {
		b, err := OpenBackend(ctx, BackendOptions{Options: Options{Path: path, Logger: zaptest.NewLogger(t),
			Now: func() time.Time { return now }}, Maintenance: m, Passive: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	b := open(sessions.Maintenance{})
	s := b.Jobs()
	end := func(at time.Time, id string, how func(id string) error) {
		now = at
		if err := s.AddJob(ctx, pruneTestJob(id, at)); err != nil {
			t.Fatal(err)
		}
		if err := how(id); err != nil {
			t.Fatalf("ending %s: %v", id, err)
		}
	}
	fired := func(id string) error {
		js, _, err := s.ClaimDueJobs(ctx, now, "me", time.Minute, 10)
		if err != nil || len(js) != 1 {
			return fmt.Errorf("claim: %v, %v", js, err)
		}
		return s.SettleJob(ctx, id, "me", sessions.JobSettle{Fired: now, State: sessions.JobDone, NextAt: now})
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
	if err := b.db.w.do(ctx, func(tx *wtx) error { // as a gateway before 00002 ends it
		_, err := tx.Exec(`UPDATE jobs SET state = 'done' WHERE id = 'jolder'`)
		return err
	}); err != nil {
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
	now = pruneT0.Add(31 * 24 * time.Hour)
	if _, err := open(sessions.Maintenance{Mode: sessions.MaintenanceWarn}).MaintainAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "jolddisabled jolddone jolder jrecent jlive"; got != want {
		t.Errorf("after maintenance in warn mode: %s, want %s", got, want)
	}
	if _, err := b.MaintainAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "jolder jrecent jlive"; got != want {
		t.Errorf("31 days after the first ended: %s, want %s (jolder's end unknown: kept from now)", got, want)
	}
	now = pruneT0.Add(62 * 24 * time.Hour)
	if _, err := b.MaintainAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "jlive"; got != want {
		t.Errorf("62 days after the first ended: %s, want %s", got, want)
	}
	if err := s.AddJob(ctx, pruneTestJob("jolddone", now)); err != nil {
		t.Errorf("AddJob of a forgotten job's id: %v", err)
	}
}
