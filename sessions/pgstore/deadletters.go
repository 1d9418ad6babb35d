package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// deadLetterStore implements sessions.DeadLetters on the dead_letters
// table (migration 00011): one row per letter, its record or reply kept as
// JSON text. Bury inserts and trims to the keep count in one transaction;
// ClaimDeadLetter is one conditional UPDATE, so of concurrent resubmits
// (in any process) exactly one wins.
type deadLetterStore struct{ db *DB }

// DeadLetters returns the dead letters stored in the database.
func (db *DB) DeadLetters() sessions.DeadLetters { return deadLetterStore{db} }

const deadLetterCols = `id, kind, state, reason, at, agent_id, session_key, body`

// Bury implements sessions.DeadLetters.
func (s deadLetterStore) Bury(ctx context.Context, dl sessions.DeadLetter, keep int) (int, error) {
	ctx = withOp(ctx, OpDead)
	if err := sessions.CheckDeadLetter(dl); err != nil {
		return 0, fmt.Errorf("pgstore: bury: %w", err)
	}
	if err := checkText(dl.ID, "kind", dl.Kind, "reason", dl.Reason, "agent id", dl.AgentID, "session key", dl.SessionKey); err != nil {
		return 0, fmt.Errorf("pgstore: bury: %w", err)
	}
	if keep <= 0 {
		keep = sessions.DefaultDeadLetterKeep
	}
	body, err := letterBody(dl)
	if err != nil {
		return 0, err
	}
	dropped := 0
	err = pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO dead_letters (`+deadLetterCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
			dl.ID, dl.Kind, sessions.DeadFailed, dl.Reason, dl.At.UTC(), dl.AgentID, dl.SessionKey, body); err != nil {
			return err
		}
		// The oldest failed letters go; one being resubmitted stays (its
		// resubmit, or the next start, settles it).
		tag, err := tx.Exec(ctx, `DELETE FROM dead_letters WHERE id IN
			(SELECT id FROM dead_letters WHERE state = $2 ORDER BY at DESC, id
			 OFFSET GREATEST($1 - (SELECT count(*) FROM dead_letters WHERE state <> $2), 0))`, keep, sessions.DeadFailed)
		dropped = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pgstore: bury %q: %w", dl.ID, err)
	}
	return dropped, nil
}

// DeadLetters implements sessions.DeadLetters.
func (s deadLetterStore) DeadLetters(ctx context.Context) ([]sessions.DeadLetter, error) {
	ctx = withOp(ctx, OpDead)
	rows, err := s.db.pool.Query(ctx, `SELECT `+deadLetterCols+` FROM dead_letters ORDER BY at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: dead letters: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanLetter)
	if err != nil {
		return nil, fmt.Errorf("pgstore: dead letters: %w", err)
	}
	if out == nil {
		out = []sessions.DeadLetter{}
	}
	return out, nil
}

// ClaimDeadLetter implements sessions.DeadLetters.
func (s deadLetterStore) ClaimDeadLetter(ctx context.Context, id string) (sessions.DeadLetter, error) {
	ctx = withOp(ctx, OpDead)
	if !storableText(id) {
		return sessions.DeadLetter{}, fmt.Errorf("%w: %q", sessions.ErrNoDeadLetter, id)
	}
	rows, err := s.db.pool.Query(ctx, `UPDATE dead_letters SET state = $2 WHERE id = $1 AND state = $3
		RETURNING `+deadLetterCols, id, sessions.DeadResubmitting, sessions.DeadFailed)
	if err != nil {
		return sessions.DeadLetter{}, fmt.Errorf("pgstore: claim dead letter %q: %w", id, err)
	}
	dl, err := pgx.CollectExactlyOneRow(rows, scanLetter)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.DeadLetter{}, s.why(ctx, id)
	}
	if err != nil {
		return sessions.DeadLetter{}, fmt.Errorf("pgstore: claim dead letter %q: %w", id, err)
	}
	return dl, nil
}

// RemoveDeadLetter implements sessions.DeadLetters.
func (s deadLetterStore) RemoveDeadLetter(ctx context.Context, id, state string) error {
	ctx = withOp(ctx, OpDead)
	if !storableText(id) {
		return fmt.Errorf("%w: %q", sessions.ErrNoDeadLetter, id)
	}
	tag, err := s.db.pool.Exec(ctx, `DELETE FROM dead_letters WHERE id = $1 AND state = $2`, id, state)
	if err != nil {
		return fmt.Errorf("pgstore: remove dead letter %q: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.why(ctx, id)
}

// why says why letter id was not in the state asked for: gone, or
// claimed by a resubmit.
func (s deadLetterStore) why(ctx context.Context, id string) error {
	var state string
	err := s.db.pool.QueryRow(ctx, `SELECT state FROM dead_letters WHERE id = $1`, id).Scan(&state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %q", sessions.ErrNoDeadLetter, id)
	case err != nil:
		return fmt.Errorf("pgstore: dead letter %q: %w", id, err)
	case state == sessions.DeadResubmitting:
		return fmt.Errorf("%w: %q", sessions.ErrDeadLetterClaimed, id)
	default:
		return fmt.Errorf("%w: %q in state %s", sessions.ErrNoDeadLetter, id, state)
	}
}

// letterBody is a letter's record or reply as JSON text.
func letterBody(dl sessions.DeadLetter) (string, error) {
	var v any = dl.Record
	if dl.Kind == sessions.DeadReply {
		v = dl.Reply
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("pgstore: bury %q: encode: %w", dl.ID, err)
	}
	return string(b), nil
}

func scanLetter(row pgx.CollectableRow) (sessions.DeadLetter, error) {
	var (
		dl   sessions.DeadLetter
		body string
	)
	if err := row.Scan(&dl.ID, &dl.Kind, &dl.State, &dl.Reason, &dl.At, &dl.AgentID, &dl.SessionKey, &body); err != nil {
		return dl, err
	}
	dl.At = dl.At.UTC()
	var err error
	if dl.Kind == sessions.DeadReply {
		dl.Reply = new(sessions.Reply)
		err = json.Unmarshal([]byte(body), dl.Reply)
	} else {
		dl.Record = new(sessions.Record)
		err = json.Unmarshal([]byte(body), dl.Record)
	}
	if err != nil {
		return dl, fmt.Errorf("dead letter %q: decode body: %w", dl.ID, err)
	}
	return dl, nil
}

var _ sessions.DeadLetters = deadLetterStore{}
