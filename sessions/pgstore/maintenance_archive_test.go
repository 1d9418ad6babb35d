package pgstore

import (
	"testing"
	"time"
)

// TestArchiveExpiryReadsOnlyWhatAged: an agent that keeps many archives
// (sessions reset daily, kept for archiveRetention) has the few past it
// forgotten by each maintenance run; the statement read every archive
// of the agent to find them (its only index led by agent_id went on by
// session key). It reads the aged ones now, whatever the agent's age.
func TestArchiveExpiryReadsOnlyWhatAged(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	cutoff := now.Add(-30 * 24 * time.Hour)
	const kept, aged = 50000, 200
	if _, err := db.pool.Exec(ctx, `INSERT INTO archived (agent_id, session_key, session_id, reason, archived_at, session_started_at, updated_at)
		SELECT 'main', 'k' || (g % 5000), 's' || g, 'daily',
			CASE WHEN g <= $3 THEN $2::timestamptz - g * interval '1 min' ELSE $2::timestamptz + g * interval '1 s' END,
			$1::timestamptz, $1::timestamptz
		FROM generate_series(1, $4::int) g`, now, cutoff, aged, kept+aged); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `ANALYZE archived`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // only read
	tag, err := tx.Exec(ctx, `DELETE FROM archived WHERE agent_id = $1 AND archived_at < $2`, "main", cutoff)
	if err != nil {
		t.Fatal(err)
	}
	var read int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
		FROM pg_stat_xact_user_tables WHERE relname = 'archived'`).Scan(&read); err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != aged {
		t.Errorf("expiry removed %d archives, want the %d aged", tag.RowsAffected(), aged)
	}
	if limit := int64(4 * aged); read > limit {
		t.Errorf("expiry read %d rows to remove %d of %d: want at most %d", read, tag.RowsAffected(), kept+aged, limit)
	}
}
