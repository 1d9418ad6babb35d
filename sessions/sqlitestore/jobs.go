package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gateway/gateway/sessions"
)

// jobStore implements sessions.Jobs on the jobs table: one row per job,
// the job as JSON in body and the columns the scheduler selects on beside
// it. A claim and a settle are each one writer job, so two claims never
// take the same job and a settle applies only under its claim.
type jobStore struct{ db *DB }

var _ sessions.Jobs = jobStore{}

// Jobs returns the scheduled jobs stored in the database.
func (db *DB) Jobs() sessions.Jobs { return jobStore{db} }

const jobCols = `body, state, next_at, claim_owner, claim_until`

// AddJob implements sessions.Jobs.
func (s jobStore) AddJob(ctx context.Context, j sessions.Job) error {
	if err := sessions.CheckJob(j); err != nil {
		return fmt.Errorf("sqlitestore: add job: %w", err)
	}
	j.ClaimOwner, j.ClaimUntil = "", time.Time{}
	body, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("sqlitestore: add job %q: encode: %w", j.ID, err)
	}
	var n int64
	err = s.db.w.do(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`INSERT INTO jobs (id, agent_id, session_key, chat_key, state, next_at, body, ended_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			j.ID, j.AgentID, j.SessionKey, j.Target.ChatKey(), j.State, toNanos(j.NextAt.UTC()), string(body),
			s.endedAt(j.State))
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: add job %q: %w", j.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlitestore: add job: %w: %q", sessions.ErrJobExists, j.ID)
	}
	return nil
}

// Job implements sessions.Jobs.
func (s jobStore) Job(ctx context.Context, id string) (sessions.Job, error) {
	j, err := scanJob(s.db.read.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Job{}, fmt.Errorf("sqlitestore: job: %w: %q", sessions.ErrNoJob, id)
	}
	if err != nil {
		return sessions.Job{}, fmt.Errorf("sqlitestore: job %q: %w", id, storageErr(err))
	}
	return j, nil
}

// ListJobs implements sessions.Jobs.
func (s jobStore) ListJobs(ctx context.Context, f sessions.JobFilter) ([]sessions.Job, error) {
	out := []sessions.Job{}
	err := s.db.query(ctx, func(r *sql.Rows) error {
		j, err := scanJob(r)
		out = append(out, j)
		return err
	}, `SELECT `+jobCols+` FROM jobs
		WHERE (?1 = '' OR agent_id = ?1) AND (?2 = '' OR session_key = ?2) AND (?3 = '' OR chat_key = ?3)
		  AND (NOT ?4 OR state = 'active')
		ORDER BY next_at, id`, f.AgentID, f.SessionKey, f.ChatKey, f.Active)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list jobs: %w", err)
	}
	return out, nil
}

// RemoveJob implements sessions.Jobs.
func (s jobStore) RemoveJob(ctx context.Context, id string) error {
	var n int64
	err := s.db.w.do(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`DELETE FROM jobs WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: remove job %q: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlitestore: remove job: %w: %q", sessions.ErrNoJob, id)
	}
	return nil
}

// ClaimDueJobs implements sessions.Jobs.
func (s jobStore) ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) ([]sessions.Job, time.Time, error) {
	if limit <= 0 {
		limit = 1000
	}
	now = now.UTC()
	var (
		claimed []sessions.Job
		next    time.Time
	)
	err := s.db.w.do(ctx, func(tx *wtx) error {
		claimed, next = nil, time.Time{}
		err := queryOn(ctx, tx, func(r *sql.Rows) error {
			j, err := scanJob(r)
			claimed = append(claimed, j)
			return err
		}, claimJobsSQL, toNanos(now), owner, toNanos(now.Add(lease)), limit)
		if err != nil {
			return err
		}
		var free, held sql.NullInt64
		if err := tx.QueryRow(nextJobSQL, owner).Scan(&free, &held); err != nil {
			return err
		}
		switch {
		case free.Valid && held.Valid:
			next = fromNanos(min(free.Int64, held.Int64))
		case free.Valid:
			next = fromNanos(free.Int64)
		case held.Valid:
			next = fromNanos(held.Int64)
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("sqlitestore: claim due jobs: %w", err)
	}
	sessions.SortJobs(claimed)
	return claimed, next, nil
}

// The statements of a poll: claimJobsSQL claims for owner ?2 until ?3
// at most ?4 jobs due at ?1 and returns them; nextJobSQL finds when the
// next one not claimed by owner ?1 falls due. Both read active jobs only,
// through the partial index jobs_due (ended jobs are not read at a fire,
// however many the table holds: TestJobFireReadsNoEndedRows).
const (
	claimJobsSQL = `UPDATE jobs SET claim_owner = ?2, claim_until = ?3 WHERE id IN (
			SELECT id FROM jobs WHERE state = 'active' AND next_at <= ?1 AND (claim_owner = '' OR claim_until <= ?1)
			ORDER BY next_at, id LIMIT ?4)
		RETURNING ` + jobCols
	nextJobSQL = `SELECT
		(SELECT min(next_at) FROM jobs WHERE state = 'active' AND claim_owner = ''),
		(SELECT min(max(claim_until, next_at)) FROM jobs WHERE state = 'active' AND claim_owner <> '' AND claim_owner <> ?)`
)

// SettleJob implements sessions.Jobs.
func (s jobStore) SettleJob(ctx context.Context, id, owner string, st sessions.JobSettle) error {
	err := s.db.w.do(ctx, func(tx *wtx) error { return settleIn(tx, id, owner, st, s.endedAt(st.State)) })
	if err != nil {
		return fmt.Errorf("sqlitestore: settle job %q: %w", id, err)
	}
	return nil
}

func settleIn(tx *wtx, id, owner string, st sessions.JobSettle, endedAt any) error {
	j, err := scanJob(tx.QueryRow(`SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %q", sessions.ErrNoJob, id)
	}
	if err != nil {
		return err
	}
	if j.ClaimOwner != owner {
		return fmt.Errorf("%w (held by %q)", sessions.ErrJobClaimLost, j.ClaimOwner)
	}
	j = sessions.SettledJob(j, st)
	body, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	_, err = tx.Exec(`UPDATE jobs SET state = ?, next_at = ?, claim_owner = '', claim_until = 0, body = ?, ended_at = ?
		WHERE id = ?`, j.State, toNanos(j.NextAt.UTC()), string(body), endedAt, id)
	return err
}

// endedAt is the ended_at of a job in state: now once it ended, NULL
// while it is active.
func (s jobStore) endedAt(state string) any {
	if state == sessions.JobActive {
		return nil
	}
	return toNanos(s.db.clock())
}

// SettleJobs implements sessions.Jobs: one writer job per settle, all
// queued at once so that they share commits.
func (s jobStore) SettleJobs(ctx context.Context, owner string, ss []sessions.JobSettled) ([]error, error) {
	errs := make([]error, len(ss))
	for i, st := range ss {
		errs[i] = s.SettleJob(ctx, st.ID, owner, st.JobSettle)
	}
	return errs, nil
}

// DisableJob implements sessions.Jobs.
func (s jobStore) DisableJob(ctx context.Context, id, note string) error {
	var missing bool
	err := s.db.w.do(ctx, func(tx *wtx) error {
		j, err := scanJob(tx.QueryRow(`SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
		if missing = errors.Is(err, sql.ErrNoRows); missing {
			return nil
		}
		if err != nil || j.State != sessions.JobActive {
			return err
		}
		j.State, j.Note, j.ClaimOwner, j.ClaimUntil = sessions.JobDisabled, note, "", time.Time{}
		body, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = tx.Exec(`UPDATE jobs SET state = ?, claim_owner = '', claim_until = 0, body = ?, ended_at = ? WHERE id = ?`,
			j.State, string(body), s.endedAt(j.State), id)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("sqlitestore: disable job %q: %w", id, err)
	case missing:
		return fmt.Errorf("sqlitestore: disable job: %w: %q", sessions.ErrNoJob, id)
	}
	return nil
}

// MoveJobs implements sessions.Jobs: one writer job.
func (s jobStore) MoveJobs(ctx context.Context, fromChatKey, toChatID, fromKey, toKey string) (int, error) {
	n := 0
	err := s.db.w.do(ctx, func(tx *wtx) error {
		n = 0
		var moved []sessions.Job
		err := queryOn(ctx, tx, func(r *sql.Rows) error {
			j, err := scanJob(r)
			if err != nil {
				return err
			}
			if m, ok := sessions.MovedJob(j, fromChatKey, toChatID, fromKey, toKey); ok {
				moved = append(moved, m)
			}
			return nil
		}, `SELECT `+jobCols+` FROM jobs WHERE chat_key = ?`, fromChatKey)
		if err != nil {
			return err
		}
		for _, j := range moved {
			j.ClaimOwner, j.ClaimUntil = "", time.Time{} // the columns hold the claim
			body, err := json.Marshal(j)
			if err != nil {
				return fmt.Errorf("encode: %w", err)
			}
			if _, err := tx.Exec(`UPDATE jobs SET chat_key = ?, session_key = ?, body = ? WHERE id = ?`,
				j.Target.ChatKey(), j.SessionKey, string(body), j.ID); err != nil {
				return err
			}
		}
		n = len(moved)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: move jobs: %w", err)
	}
	return n, nil
}

// scanJob reads a row of jobCols: body, with the columns laid over it.
func scanJob(r rowScanner) (sessions.Job, error) {
	var (
		j           sessions.Job
		body, state string
		owner       string
		next, until int64
	)
	if err := r.Scan(&body, &state, &next, &owner, &until); err != nil {
		return j, err
	}
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		return j, fmt.Errorf("job: decode body: %w", err)
	}
	j.State, j.NextAt, j.ClaimOwner, j.ClaimUntil = state, fromNanos(next), owner, fromNanos(until)
	return j, nil
}
