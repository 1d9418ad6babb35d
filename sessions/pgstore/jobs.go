package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// jobStore implements sessions.Jobs on the jobs table (migration 00014):
// one row per job, the job as JSON in body and the columns the scheduler
// selects on beside it (they, not body, are authoritative for state, due
// time and claim). ClaimDueJobs is one UPDATE over a SELECT ... FOR UPDATE
// SKIP LOCKED, so replicas claiming at once take disjoint jobs and never
// wait for each other; SettleJob updates a row only under its claim.
type jobStore struct{ db *DB }

// Jobs returns the scheduled jobs stored in the database.
func (db *DB) Jobs() sessions.Jobs { return jobStore{db} }

const jobCols = `body, state, next_at, claim_owner, claim_until`

// AddJob implements sessions.Jobs.
func (s jobStore) AddJob(ctx context.Context, j sessions.Job) error {
	ctx = withOp(ctx, OpJobs)
	if err := sessions.CheckJob(j); err != nil {
		return fmt.Errorf("pgstore: add job: %w", err)
	}
	j.ClaimOwner, j.ClaimUntil = "", time.Time{}
	body, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("pgstore: add job %q: encode: %w", j.ID, err)
	}
	tag, err := s.db.pool.Exec(ctx, `INSERT INTO jobs (id, agent_id, session_key, chat_key, state, next_at, body, ended_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
		j.ID, j.AgentID, j.SessionKey, j.Target.ChatKey(), j.State, j.NextAt.UTC(), body, s.endedAt(j.State))
	if err != nil {
		return fmt.Errorf("pgstore: add job %q: %w", j.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: add job: %w: %q", sessions.ErrJobExists, j.ID)
	}
	return nil
}

// Job implements sessions.Jobs.
func (s jobStore) Job(ctx context.Context, id string) (sessions.Job, error) {
	ctx = withOp(ctx, OpJobs)
	if !storableText(id) {
		return sessions.Job{}, fmt.Errorf("pgstore: job: %w: %q", sessions.ErrNoJob, id)
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id)
	if err != nil {
		return sessions.Job{}, fmt.Errorf("pgstore: job %q: %w", id, err)
	}
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Job{}, fmt.Errorf("pgstore: job: %w: %q", sessions.ErrNoJob, id)
	}
	if err != nil {
		return sessions.Job{}, fmt.Errorf("pgstore: job %q: %w", id, err)
	}
	return j, nil
}

// ListJobs implements sessions.Jobs.
func (s jobStore) ListJobs(ctx context.Context, f sessions.JobFilter) ([]sessions.Job, error) {
	ctx = withOp(ctx, OpJobs)
	if !storableText(f.AgentID, f.SessionKey, f.ChatKey) {
		return []sessions.Job{}, nil // no stored job has such a value
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+jobCols+` FROM jobs
		WHERE ($1 = '' OR agent_id = $1) AND ($2 = '' OR session_key = $2) AND ($3 = '' OR chat_key = $3)
		  AND (NOT $4 OR state = 'active')
		ORDER BY next_at, id`, f.AgentID, f.SessionKey, f.ChatKey, f.Active)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list jobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list jobs: %w", err)
	}
	if out == nil {
		out = []sessions.Job{}
	}
	return out, nil
}

// RemoveJob implements sessions.Jobs.
func (s jobStore) RemoveJob(ctx context.Context, id string) error {
	ctx = withOp(ctx, OpJobs)
	if !storableText(id) {
		return fmt.Errorf("pgstore: remove job: %w: %q", sessions.ErrNoJob, id)
	}
	tag, err := s.db.pool.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("pgstore: remove job %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: remove job: %w: %q", sessions.ErrNoJob, id)
	}
	return nil
}

// ClaimDueJobs implements sessions.Jobs. One statement claims the due
// jobs and finds when the next one falls due (issue 21: a scheduler polls
// every second on every replica, and two statements a poll were a round
// trip more each second than the claim needs). The next-due half reads
// the table as the statement found it, before its own claims: the jobs it
// claims are left out by id, as the claim had committed.
func (s jobStore) ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) ([]sessions.Job, time.Time, error) {
	ctx = withOp(ctx, OpJobs)
	if limit <= 0 {
		limit = 1000
	}
	now = now.UTC()
	rows, err := s.db.pool.Query(ctx, claimDueJobsSQL, now, owner, now.Add(lease), limit)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("pgstore: claim due jobs: %w", err)
	}
	var (
		claimed []sessions.Job
		at      time.Time
	)
	for rows.Next() {
		var (
			isNext bool
			next   *time.Time
		)
		j, err := scanJobOr(rows, &isNext, &next)
		if err != nil {
			rows.Close()
			return nil, time.Time{}, fmt.Errorf("pgstore: claim due jobs: %w", err)
		}
		switch {
		case !isNext:
			claimed = append(claimed, j)
		case next != nil:
			at = next.UTC()
		}
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("pgstore: claim due jobs: %w", err)
	}
	sessions.SortJobs(claimed)
	return claimed, at, nil
}

// claimDueJobsSQL claims up to $4 due jobs for owner $2 until $3 (at $1)
// and returns them, then one row (is_next) with when the next job falls
// due: the first unclaimed one, or the first claim of another owner to run
// out (NULL: none).
const claimDueJobsSQL = `WITH due AS (
		SELECT id FROM jobs
		WHERE state = 'active' AND next_at <= $1 AND (claim_owner = '' OR claim_until <= $1)
		ORDER BY next_at, id LIMIT $4
		FOR UPDATE SKIP LOCKED),
	claimed AS (
		UPDATE jobs SET claim_owner = $2, claim_until = $3 FROM due WHERE jobs.id = due.id
		RETURNING jobs.id, jobs.body, jobs.state, jobs.next_at, jobs.claim_owner, jobs.claim_until)
	SELECT false AS is_next, body, state, next_at, claim_owner, claim_until, NULL::timestamptz FROM claimed
	UNION ALL
	SELECT true, NULL, NULL, NULL, NULL, NULL, least(
		(SELECT next_at FROM jobs WHERE state = 'active' AND claim_owner = ''
			AND id NOT IN (SELECT id FROM claimed) ORDER BY next_at, id LIMIT 1),
		(SELECT min(greatest(claim_until, next_at)) FROM jobs
		 WHERE state = 'active' AND claim_owner <> '' AND claim_owner <> $2
			AND id NOT IN (SELECT id FROM claimed)))`

// scanJobOr reads a row of claimDueJobsSQL: a claimed job, or (*isNext)
// the next due time.
func scanJobOr(rows pgx.Rows, isNext *bool, next **time.Time) (sessions.Job, error) {
	var (
		j     sessions.Job
		body  []byte
		state *string
		at    *time.Time
		owner *string
		until *time.Time
	)
	if err := rows.Scan(isNext, &body, &state, &at, &owner, &until, next); err != nil {
		return j, err
	}
	if *isNext {
		return j, nil
	}
	if err := json.Unmarshal(body, &j); err != nil {
		return j, fmt.Errorf("job: decode body: %w", err)
	}
	j.State, j.NextAt, j.ClaimOwner = *state, at.UTC(), *owner
	j.ClaimUntil = time.Time{}
	if until != nil {
		j.ClaimUntil = until.UTC()
	}
	return j, nil
}

// SettleJob implements sessions.Jobs.
func (s jobStore) SettleJob(ctx context.Context, id, owner string, st sessions.JobSettle) error {
	ctx = withOp(ctx, OpJobs)
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1 FOR UPDATE`, id)
		if err != nil {
			return err
		}
		j, err := pgx.CollectExactlyOneRow(rows, scanJob)
		if errors.Is(err, pgx.ErrNoRows) {
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
		_, err = tx.Exec(ctx, `UPDATE jobs SET state = $2, next_at = $3, claim_owner = '', claim_until = NULL, body = $4,
			ended_at = $5 WHERE id = $1`, id, j.State, j.NextAt.UTC(), body, s.endedAt(j.State))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: settle job %q: %w", id, err)
	}
	return nil
}

// SettleJobs implements sessions.Jobs: each job in its own transaction
// (rows are independent; one settle costs what SettleJob does).
func (s jobStore) SettleJobs(ctx context.Context, owner string, ss []sessions.JobSettled) ([]error, error) {
	errs := make([]error, len(ss))
	for i, st := range ss {
		errs[i] = s.SettleJob(ctx, st.ID, owner, st.JobSettle)
	}
	return errs, nil
}

// DisableJob implements sessions.Jobs.
func (s jobStore) DisableJob(ctx context.Context, id, note string) error {
	ctx = withOp(ctx, OpJobs)
	if !storableText(id) {
		return fmt.Errorf("pgstore: disable job: %w: %q", sessions.ErrNoJob, id)
	}
	tag, err := s.db.pool.Exec(ctx, `UPDATE jobs SET state = $2, claim_owner = '', claim_until = NULL,
			body = jsonb_set(body, '{note}', to_jsonb($3::text)), ended_at = $4
		WHERE id = $1 AND state = 'active'`, id, sessions.JobDisabled, note, s.db.clock())
	if err != nil {
		return fmt.Errorf("pgstore: disable job %q: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	if _, err := s.Job(ctx, id); err != nil {
		return fmt.Errorf("pgstore: disable job: %w", err)
	}
	return nil
}

// MoveJobs implements sessions.Jobs: one transaction, the room's rows
// locked.
func (s jobStore) MoveJobs(ctx context.Context, fromChatKey, toChatID, fromKey, toKey string) (int, error) {
	ctx = withOp(ctx, OpJobs)
	n := 0
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE chat_key = $1 FOR UPDATE`, fromChatKey)
		if err != nil {
			return err
		}
		js, err := pgx.CollectRows(rows, scanJob)
		if err != nil {
			return err
		}
		n = 0
		for _, j := range js {
			m, ok := sessions.MovedJob(j, fromChatKey, toChatID, fromKey, toKey)
			if !ok {
				continue
			}
			m.ClaimOwner, m.ClaimUntil = "", time.Time{} // the columns hold the claim
			body, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("encode: %w", err)
			}
			if _, err := tx.Exec(ctx, `UPDATE jobs SET chat_key = $2, session_key = $3, body = $4 WHERE id = $1`,
				m.ID, m.Target.ChatKey(), m.SessionKey, body); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pgstore: move jobs: %w", err)
	}
	return n, nil
}

// endedAt is the ended_at of a job in state: now once it ended, NULL
// while it is active.
func (s jobStore) endedAt(state string) *time.Time {
	if state == sessions.JobActive {
		return nil
	}
	now := s.db.clock()
	return &now
}

// scanJob reads a row of jobCols: body, with the columns laid over it.
func scanJob(row pgx.CollectableRow) (sessions.Job, error) {
	var (
		j     sessions.Job
		body  []byte
		until *time.Time
	)
	var state, owner string
	var next time.Time
	if err := row.Scan(&body, &state, &next, &owner, &until); err != nil {
		return j, err
	}
	if err := json.Unmarshal(body, &j); err != nil {
		return j, fmt.Errorf("job: decode body: %w", err)
	}
	j.State, j.NextAt, j.ClaimOwner = state, next.UTC(), owner
	j.ClaimUntil = time.Time{}
	if until != nil {
		j.ClaimUntil = until.UTC()
	}
	return j, nil
}

var _ sessions.Jobs = jobStore{}
