package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gateway/gateway/sessions"
)

// deadLetterStore implements sessions.DeadLetters on the dead_letters
// table; a claim is one conditional UPDATE in a writer job, so of
// concurrent resubmits exactly one wins.
type deadLetterStore struct{ db *DB }

var _ sessions.DeadLetters = deadLetterStore{}

// DeadLetters returns the dead letters stored in the database.
func (db *DB) DeadLetters() sessions.DeadLetters { return deadLetterStore{db} }

const deadLetterCols = `id, kind, state, reason, at, agent_id, session_key, body`

// checkText refuses text no backend keeps unchanged (NUL, invalid UTF-8).
func checkText(owner string, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		v := pairs[i+1]
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%q: %s %q is not valid UTF-8 without NUL bytes", owner, pairs[i], v)
		}
	}
	return nil
}

// Bury implements sessions.DeadLetters.
func (s deadLetterStore) Bury(ctx context.Context, dl sessions.DeadLetter, keep int) (int, error) {
	if err := sessions.CheckDeadLetter(dl); err != nil {
		return 0, fmt.Errorf("sqlitestore: bury: %w", err)
	}
	if err := checkText(dl.ID, "kind", dl.Kind, "reason", dl.Reason, "agent id", dl.AgentID, "session key", dl.SessionKey); err != nil {
		return 0, fmt.Errorf("sqlitestore: bury: %w", err)
	}
	if keep <= 0 {
		keep = sessions.DefaultDeadLetterKeep
	}
	var v any = dl.Record
	if dl.Kind == sessions.DeadReply {
		v = dl.Reply
	}
	body, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: bury %q: encode: %w", dl.ID, err)
	}
	dropped := 0
	err = s.db.w.do(ctx, func(tx *wtx) error {
		if _, err := tx.Exec(`INSERT INTO dead_letters (`+deadLetterCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, dl.ID, dl.Kind, sessions.DeadFailed, dl.Reason, toNanos(dl.At.UTC()),
			dl.AgentID, dl.SessionKey, string(body)); err != nil {
			return err
		}
		// The oldest failed letters go; one being resubmitted stays (its
		// resubmit, or the next start, settles it).
		var claimed int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM dead_letters WHERE state <> ?`, sessions.DeadFailed).Scan(&claimed); err != nil {
			return err
		}
		r, err := tx.Exec(`DELETE FROM dead_letters WHERE id IN
			(SELECT id FROM dead_letters WHERE state = ? ORDER BY at DESC, id LIMIT -1 OFFSET ?)`,
			sessions.DeadFailed, max(keep-claimed, 0))
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		dropped = int(n)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: bury %q: %w", dl.ID, err)
	}
	return dropped, nil
}

// DeadLetters implements sessions.DeadLetters: newest first.
func (s deadLetterStore) DeadLetters(ctx context.Context) ([]sessions.DeadLetter, error) {
	out := []sessions.DeadLetter{}
	err := s.db.query(ctx, func(r *sql.Rows) error {
		dl, err := scanLetter(r)
		out = append(out, dl)
		return err
	}, `SELECT `+deadLetterCols+` FROM dead_letters ORDER BY at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: dead letters: %w", err)
	}
	return out, nil
}

// ClaimDeadLetter implements sessions.DeadLetters.
func (s deadLetterStore) ClaimDeadLetter(ctx context.Context, id string) (sessions.DeadLetter, error) {
	var (
		dl  sessions.DeadLetter
		why error
	)
	err := s.db.w.do(ctx, func(tx *wtx) error {
		rows, err := tx.Query(`UPDATE dead_letters SET state = ? WHERE id = ? AND state = ? RETURNING `+deadLetterCols,
			sessions.DeadResubmitting, id, sessions.DeadFailed)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			why = errNoClaim
			return nil
		}
		dl, err = scanLetter(rows)
		if err != nil {
			return err
		}
		return rows.Close()
	})
	if err != nil {
		return sessions.DeadLetter{}, fmt.Errorf("sqlitestore: claim dead letter %q: %w", id, err)
	}
	if why != nil {
		return sessions.DeadLetter{}, s.why(ctx, id)
	}
	return dl, nil
}

var errNoClaim = errors.New("not claimed")

// RemoveDeadLetter implements sessions.DeadLetters.
func (s deadLetterStore) RemoveDeadLetter(ctx context.Context, id, state string) error {
	var n int64
	err := s.db.w.do(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`DELETE FROM dead_letters WHERE id = ? AND state = ?`, id, state)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: remove dead letter %q: %w", id, err)
	}
	if n == 1 {
		return nil
	}
	return s.why(ctx, id)
}

// why says why letter id was not in the state asked for: gone, or
// claimed by a resubmit.
func (s deadLetterStore) why(ctx context.Context, id string) error {
	var state string
	err := s.db.read.QueryRowContext(ctx, `SELECT state FROM dead_letters WHERE id = ?`, id).Scan(&state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %q", sessions.ErrNoDeadLetter, id)
	case err != nil:
		return fmt.Errorf("sqlitestore: dead letter %q: %w", id, storageErr(err))
	case state == sessions.DeadResubmitting:
		return fmt.Errorf("%w: %q", sessions.ErrDeadLetterClaimed, id)
	default:
		return fmt.Errorf("%w: %q in state %s", sessions.ErrNoDeadLetter, id, state)
	}
}

func scanLetter(r *sql.Rows) (sessions.DeadLetter, error) {
	var (
		dl   sessions.DeadLetter
		body string
		at   int64
	)
	if err := r.Scan(&dl.ID, &dl.Kind, &dl.State, &dl.Reason, &at, &dl.AgentID, &dl.SessionKey, &body); err != nil {
		return dl, err
	}
	dl.At = fromNanos(at)
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
