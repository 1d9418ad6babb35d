package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
)

// Pairing: the seam's PairingState on the pairing_* tables (migration
// 00004). A channel's requests and approvals are rows, in list order (pos).
// An update holds a transaction-scoped advisory lock of its channel while
// it reads, runs the caller's function and rewrites the rows, so updates
// of one channel from any number of pools queue and none is lost; reads
// take a snapshot and never wait.

// pairingLockClass is the first key of the channel locks ("pair").
const pairingLockClass int32 = 0x70616972

// pairingState implements sessions.PairingState over a DB.
type pairingState struct{ db *DB }

// Pairing returns the pairing state stored in the database.
func (db *DB) Pairing() sessions.PairingState { return pairingState{db} }

// LoadPairing implements sessions.PairingState.
func (p pairingState) LoadPairing(ctx context.Context, channel string) (pairstate.Data, error) {
	ctx = withOp(ctx, OpPairing)
	if err := pairstate.CheckChannel(channel); err != nil {
		return pairstate.Data{}, err
	}
	d, err := loadPairing(ctx, p.db.pool, channel)
	if err != nil {
		return pairstate.Data{}, fmt.Errorf("pgstore: load pairing %s: %w", channel, err)
	}
	return d, nil
}

// UpdatePairing implements sessions.PairingState. fn runs inside the
// transaction; its error is returned as it is.
func (p pairingState) UpdatePairing(ctx context.Context, channel string, fn func(*pairstate.Data) (bool, error)) error {
	ctx = withOp(ctx, OpPairing)
	if err := pairstate.CheckChannel(channel); err != nil {
		return err
	}
	var fnErr error
	err := pgx.BeginFunc(ctx, p.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, pairingLockClass, channel); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
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
		return storePairing(ctx, tx, channel, d, p.db.clock())
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("pgstore: update pairing %s: %w", channel, err)
	}
	return nil
}

// PairingChannels implements sessions.PairingState.
func (p pairingState) PairingChannels(ctx context.Context) ([]string, error) {
	ctx = withOp(ctx, OpPairing)
	rows, err := p.db.pool.Query(ctx, `SELECT channel FROM pairing_channels ORDER BY channel`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: pairing channels: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: pairing channels: %w", err)
	}
	return out, nil
}

// rowsQueryer is a pool or a transaction.
type rowsQueryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// loadPairingSQL reads both lists of a channel in one statement, so in one
// snapshot: a concurrent approval (a request moving to the approvals) is
// seen whole or not at all. kind 0 rows are requests, kind 1 approvals.
const loadPairingSQL = `SELECT 0 AS kind, pos, account_id, code, sender_id, sender_name, chat_id, created_at, expires_at
	FROM pairing_requests WHERE channel = $1
UNION ALL
SELECT 1, pos, account_id, code, sender_id, sender_name, '', approved_at, approved_at
	FROM pairing_approvals WHERE channel = $1
ORDER BY kind, pos`

func loadPairing(ctx context.Context, q rowsQueryer, channel string) (pairstate.Data, error) {
	rows, err := q.Query(ctx, loadPairingSQL, channel)
	if err != nil {
		return pairstate.Data{}, err
	}
	var (
		d          pairstate.Data
		kind, pos  int32
		acct, code string
		sender     string
		name, chat string
		t1, t2     time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &pos, &acct, &code, &sender, &name, &chat, &t1, &t2}, func() error {
		if kind == 0 {
			d.Pending = append(d.Pending, pairstate.Request{Channel: channel, AccountID: acct, Code: code,
				SenderID: sender, SenderName: name, ChatID: chat, CreatedAt: t1.UTC(), ExpiresAt: t2.UTC()})
		} else {
			d.Allowed = append(d.Allowed, pairstate.Approval{Channel: channel, AccountID: acct, SenderID: sender,
				SenderName: name, Code: code, ApprovedAt: t1.UTC()})
		}
		return nil
	})
	return d, err
}

// storePairing replaces channel's rows with d, in one round trip.
func storePairing(ctx context.Context, tx pgx.Tx, channel string, d pairstate.Data, now time.Time) error {
	var (
		b       pgx.Batch
		n       = len(d.Pending)
		pos     = make([]int32, n)
		acct    = make([]string, n)
		code    = make([]string, n)
		sender  = make([]string, n)
		name    = make([]string, n)
		chat    = make([]string, n)
		created = make([]time.Time, n)
		expires = make([]time.Time, n)
	)
	for i, r := range d.Pending {
		pos[i], acct[i], code[i], sender[i], name[i], chat[i] = int32(i), r.AccountID, r.Code, r.SenderID, r.SenderName, r.ChatID
		created[i], expires[i] = r.CreatedAt, r.ExpiresAt
	}
	b.Queue(`INSERT INTO pairing_channels (channel, updated_at) VALUES ($1, $2)
		ON CONFLICT (channel) DO UPDATE SET updated_at = excluded.updated_at`, channel, now)
	b.Queue(`DELETE FROM pairing_requests WHERE channel = $1`, channel)
	b.Queue(`DELETE FROM pairing_approvals WHERE channel = $1`, channel)
	b.Queue(`INSERT INTO pairing_requests (channel, pos, account_id, code, sender_id, sender_name, chat_id, created_at, expires_at)
		SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::timestamptz[], $9::timestamptz[])`, channel, pos, acct, code, sender, name, chat, created, expires)
	m := len(d.Allowed)
	apos, aacct, asender, aname, acode, approved :=
		make([]int32, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]time.Time, m)
	for i, a := range d.Allowed {
		apos[i], aacct[i], asender[i], aname[i], acode[i], approved[i] = int32(i), a.AccountID, a.SenderID, a.SenderName, a.Code, a.ApprovedAt
	}
	b.Queue(`INSERT INTO pairing_approvals (channel, pos, account_id, sender_id, sender_name, code, approved_at)
		SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])`,
		channel, apos, aacct, asender, aname, acode, approved)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

var _ sessions.PairingState = pairingState{}
