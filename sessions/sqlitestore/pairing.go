package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
)

// pairingState implements sessions.PairingState on the pairing table: a
// channel's data is one JSON document, and an update is one job of the
// writer (read, the caller's function, write), so updates of a channel
// queue there and none is lost.
type pairingState struct{ db *DB }

var _ sessions.PairingState = pairingState{}

// Pairing returns the pairing state stored in the database.
func (db *DB) Pairing() sessions.PairingState { return pairingState{db} }

// LoadPairing implements sessions.PairingState.
func (p pairingState) LoadPairing(ctx context.Context, channel string) (pairstate.Data, error) {
	if err := pairstate.CheckChannel(channel); err != nil {
		return pairstate.Data{}, err
	}
	d, err := loadPairing(ctx, p.db.read, channel)
	if err != nil {
		return pairstate.Data{}, fmt.Errorf("sqlitestore: load pairing %s: %w", channel, err)
	}
	return d, nil
}

func loadPairing(ctx context.Context, q rowQuerier, channel string) (pairstate.Data, error) {
	var body string
	err := q.QueryRowContext(ctx, `SELECT body FROM pairing WHERE channel = ?`, channel).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return pairstate.Data{}, nil
	}
	if err != nil {
		return pairstate.Data{}, storageErr(err)
	}
	var d pairstate.Data
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		return pairstate.Data{}, fmt.Errorf("decode: %w", err)
	}
	if len(d.Pending) == 0 {
		d.Pending = nil
	}
	if len(d.Allowed) == 0 {
		d.Allowed = nil
	}
	return d, nil
}

// UpdatePairing implements sessions.PairingState. fn runs inside the
// writer's job; its error is returned as it is.
func (p pairingState) UpdatePairing(ctx context.Context, channel string, fn func(*pairstate.Data) (bool, error)) error {
	if err := pairstate.CheckChannel(channel); err != nil {
		return err
	}
	var fnErr error
	now := toNanos(p.db.clock())
	err := p.db.w.do(ctx, func(tx *wtx) error {
		fnErr = nil
		d, err := loadPairing(ctx, tx, channel)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		changed, err := fn(&d)
		if err != nil {
			fnErr = err
			return err
		}
		if !changed {
			return nil
		}
		if err := pairstate.CheckData(channel, d); err != nil {
			fnErr = err
			return err
		}
		body, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = tx.Exec(`INSERT INTO pairing (channel, body, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (channel) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`,
			channel, string(body), now)
		return err
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("sqlitestore: update pairing %s: %w", channel, err)
	}
	return nil
}

// PairingChannels implements sessions.PairingState.
func (p pairingState) PairingChannels(ctx context.Context) ([]string, error) {
	var out []string
	err := p.db.query(ctx, func(r *sql.Rows) error {
		var c string
		if err := r.Scan(&c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	}, `SELECT channel FROM pairing ORDER BY channel`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: pairing channels: %w", err)
	}
	return out, nil
}
