package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gateway/gateway/sessions"
)

// The seam's callers (dispatch) tell the storage failing from a turn
// failing by sessions.ErrStorage: work that meets the first waits for the
// storage and runs again, work that meets the second counts a failure and
// is given up after a few. A database that is restarting, unreachable or
// too slow (a statement timeout behind a lock) is the storage failing, so
// the sessions and transcripts a Store hands out wrap such errors in
// sessions.ErrStorage, as Delivery does for its writes.

// unavailable reports whether err says the server could not serve a call
// now (connection refused or lost, the server shutting down or starting,
// out of resources, a statement or call timed out, a read-only standby),
// as opposed to refusing it for what it asks or holds, or the caller
// cancelling it.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	// A connection that could not be made is the server unavailable
	// whatever it answered (starting, shutting down, refusing the
	// database): checked before the PgError it may carry.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if len(pe.Code) < 2 {
			return false
		}
		switch pe.Code[:2] {
		case "08", "40", "53", "57", "58": // connection, rollback (serialization, deadlock), resources, operator, system
			return true
		}
		return pe.Code == "55P03" || pe.Code == "25006" // lock not available, read-only transaction
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}

// storageErr wraps err in sessions.ErrStorage when the server was
// unavailable (see unavailable); other errors are returned as they are.
func (db *DB) storageErr(err error) error {
	if !unavailable(err) || errors.Is(err, sessions.ErrStorage) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", sessions.ErrStorage, db.target, err)
}

// storeTranscript is the TranscriptLog a Store hands out: its errors are
// wrapped by DB.storageErr.
type storeTranscript struct{ t *TranscriptLog }

var _ sessions.TranscriptLog = storeTranscript{}

func (s storeTranscript) Append(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	ids, err := s.t.Append(ctx, msgs...)
	return ids, s.t.db.storageErr(err)
}

func (s storeTranscript) AppendLazy(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	ids, err := s.t.AppendLazy(ctx, msgs...)
	return ids, s.t.db.storageErr(err)
}

func (s storeTranscript) AppendLazyContext(ctx context.Context, msgs ...sessions.Message) ([]string, sessions.Context, error) {
	ids, c, err := s.t.AppendLazyContext(ctx, msgs...)
	return ids, c, s.t.db.storageErr(err)
}

func (s storeTranscript) AppendCompaction(ctx context.Context, c sessions.Compaction) (string, error) {
	id, err := s.t.AppendCompaction(ctx, c)
	return id, s.t.db.storageErr(err)
}

func (s storeTranscript) Context(ctx context.Context) (sessions.Context, error) {
	c, err := s.t.Context(ctx)
	return c, s.t.db.storageErr(err)
}

func (s storeTranscript) History(ctx context.Context) ([]sessions.Message, error) {
	h, err := s.t.History(ctx)
	return h, s.t.db.storageErr(err)
}

func (s storeTranscript) Records(ctx context.Context, ids []string) (sessions.RecordsState, error) {
	rs, err := s.t.Records(ctx, ids)
	return rs, s.t.db.storageErr(err)
}

func (s storeTranscript) Stats(ctx context.Context) (int, int64, error) {
	n, last, err := s.t.Stats(ctx)
	return n, last, s.t.db.storageErr(err)
}
