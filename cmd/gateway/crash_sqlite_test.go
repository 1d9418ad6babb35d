package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions/sqlitestore"
)

// TestCrashLosesNothingRepeatsNothingSQLite is the crash test (see
// TestCrashLosesNothingRepeatsNothing) on the sqlite backend: the daemon
// SIGKILLed under traffic at least 50 times, the fake Telegram's record
// checked the same way, and the transcripts read back through the storage
// seam.
func TestCrashLosesNothingRepeatsNothingSQLite(t *testing.T) {
	runCrash(t, crashBackend{storage: "storage: {backend: sqlite}\n", checkTranscripts: checkCrashTranscriptsSeam,
		inFlightIn: sqliteInFlight})
}

// sqliteInFlight is crashBackend.inFlightIn on the database in state,
// read directly through a read-only connection (a Delivery handle would
// list only other handles' records): records without an outcome plus
// replies not completely delivered, and for each of records ("label=record
// id") its journal row or its absence.
func sqliteInFlight(t *testing.T, state string, records []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", "file:"+sqlitestore.PathIn(state)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return -1, fmt.Sprintf("in flight: %v", err)
	}
	defer db.Close()
	var pending int
	err = db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM journal WHERE done_at IS NULL AND reply IS NULL)
		+ (SELECT count(*) FROM outbox WHERE sent < chunks)`).Scan(&pending)
	if err != nil {
		return -1, fmt.Sprintf("in flight: %v", err)
	}
	var b strings.Builder
	for _, lr := range records {
		label, id, _ := strings.Cut(lr, "=")
		var (
			starts, failures int
			done             sql.NullInt64
			owner, reply     string
			progress         string
		)
		err := db.QueryRowContext(ctx, `SELECT j.starts, j.failures, j.done_at, j.owner, coalesce(j.reply, ''),
				coalesce(o.sent || '/' || o.chunks, 'none')
			FROM journal j LEFT JOIN outbox o ON o.id = j.reply WHERE j.id = ?`, id).
			Scan(&starts, &failures, &done, &owner, &reply, &progress)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			fmt.Fprintf(&b, "%s: record %s not in the journal (never accepted)\n", label, id)
		case err != nil:
			fmt.Fprintf(&b, "%s: record %s: %v\n", label, id, err)
		default:
			fmt.Fprintf(&b, "%s: record %s done %v starts %d failures %d owner %q reply %q (sent %s)\n",
				label, id, done.Valid, starts, failures, owner, reply, progress)
		}
	}
	return pending, b.String()
}
