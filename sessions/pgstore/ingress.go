package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Ingress: channel cursors (the Telegram offset, which advances only
// after the journal write). The ingress journal, reply outbox and drafts
// are Delivery (delivery*.go).

// GetCursor returns a channel cursor, such as the Telegram getUpdates
// offset of one bot account (channel "telegram", account the bot, name
// "offset"), and false when none was set.
func (db *DB) GetCursor(ctx context.Context, channel, account, name string) (string, bool, error) {
	var v string
	err := db.pool.QueryRow(ctx, `SELECT value FROM cursors WHERE channel = $1 AND account = $2 AND name = $3`,
		channel, account, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("pgstore: get cursor %s/%s/%s: %w", channel, account, name, err)
	}
	return v, true, nil
}

// SetCursor stores a channel cursor durably (last writer wins).
func (db *DB) SetCursor(ctx context.Context, channel, account, name, value string) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO cursors (channel, account, name, value, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (channel, account, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		channel, account, name, value, db.clock())
	if err != nil {
		return fmt.Errorf("pgstore: set cursor %s/%s/%s: %w", channel, account, name, err)
	}
	return nil
}
