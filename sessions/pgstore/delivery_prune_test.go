package pgstore

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestDeliveryPruneReadsOnlyWhatAged: a busy bot remembers a day of done
// ids (sessions.DoneRetention); the loop prunes every minute the few
// hundred that aged out. The prune read, each minute, every done record
// of the day to find them (its index bound was the newest DoneKeep, the
// age a filter on each row: 489,306 rows read to delete 347 at 500,000 a
// day). It now reads the aged records and stops at the first young one.
func TestDeliveryPruneReadsOnlyWhatAged(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	cutoff := now.Add(-sessions.DoneRetention)
	const day, aged, keep = 50000, 300, 1000
	// done_seq 1..aged completed before the cutoff, the rest of the day
	// after it, oldest first.
	if _, err := db.pool.Exec(ctx, `INSERT INTO delivery_records (id, seq, state, accepted_at, done_at, done_seq)
		SELECT 'r' || g, g, 'done', t, t, g FROM generate_series(1, $3::int) g,
			LATERAL (SELECT CASE WHEN g <= $4 THEN $2::timestamptz - ($4 + 1 - g) * interval '1 s'
				ELSE $2::timestamptz + (g - $4) * ($1::timestamptz - $2::timestamptz) / ($3 - $4 + 1) END AS t) x`,
		now, cutoff, day, aged); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `ANALYZE delivery_records`); err != nil {
		t.Fatal(err)
	}
	// The rows the statement reads, counted by the server for this
	// transaction (pg_stat_xact_user_tables), then rolled back.
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := tx.Exec(ctx, pruneDoneSQL, cutoff, keep)
	if err != nil {
		t.Fatal(err)
	}
	var read int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
		FROM pg_stat_xact_user_tables WHERE relname = 'delivery_records'`).Scan(&read); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	if tag.RowsAffected() != aged {
		t.Errorf("prune deleted %d records, want the %d aged", tag.RowsAffected(), aged)
	}
	if limit := int64(4*aged + keep); read > limit {
		t.Errorf("prune read %d rows to delete %d of %d: want at most %d", read, tag.RowsAffected(), day, limit)
	}

	d := newDelivery(t, db, DeliveryOptions{Now: func() time.Time { return now }, DoneKeep: keep})
	if err := d.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_records WHERE state = 'done'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != day-aged {
		t.Errorf("%d done records left, want %d", left, day-aged)
	}
	for _, id := range []string{"r301", "r50000"} {
		if !isDup(t, d, id) {
			t.Errorf("%s forgotten", id)
		}
	}
	if isDup(t, d, "r300") {
		t.Error("r300 aged out, yet remembered")
	}
}
