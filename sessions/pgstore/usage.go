package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// usageLog implements sessions.UsageLog on the usage table (migration
// 00008): Record is one INSERT of every row, committed lazily through the
// group commit (writegroup.go: a turn's row shares a round trip with the
// writes of other turns, no WAL flush wait), Query one GROUP BY over the indexes of (at), (agent_id,
// session_id, at) (the primary key: migration 00022), (channel, sender_id, at) and (session_key, at)
// (migration 00019).
type usageLog struct{ db *DB }

// Usage returns the usage ledger stored in the database.
func (db *DB) Usage() sessions.UsageLog { return usageLog{db} }

// Record implements sessions.UsageLog; a row whose agent, session id and
// time are stored already is ignored.
func (u usageLog) Record(ctx context.Context, rows ...sessions.UsageRow) error {
	ctx = withOp(ctx, OpUsage)
	fill, err := usageInsert(rows)
	if err != nil || fill == nil {
		return err
	}
	// A lazy commit (lazy.go): like the files ledger's unsynced write, a
	// row is lost only by a server crash within wal_writer_delay, and
	// `gateway usage rebuild` restores it from the transcript.
	if err := u.db.writes.do(ctx, &write{op: OpUsage, key: rowKey("u"), fill: fill}); err != nil {
		return fmt.Errorf("pgstore: usage: record %d rows: %w", len(rows), err)
	}
	return nil
}

// RecordLater is Record without waiting: the rows ride with the DB's next
// write (a turn records its row before its reply's outbox write, which
// carries it: writegroup.go), or go alone a few milliseconds later, and
// reads see them once written. It checks the rows; a write that fails is
// logged (`gateway usage rebuild` restores the rows).
func (u usageLog) RecordLater(rows ...sessions.UsageRow) error {
	fill, err := usageInsert(rows)
	if err != nil || fill == nil {
		return err
	}
	u.db.writes.ride(&write{op: OpUsage, key: rowKey("u"), fill: fill, done: func(err error) {
		if err != nil {
			u.db.log.Warn("usage rows not recorded; `gateway usage rebuild` restores them", zap.Int("rows", len(rows)), zap.Error(err))
		}
	}})
	return nil
}

// usageInsert checks rows and returns the fill of the write inserting them
// (nil for no rows).
func usageInsert(rows []sessions.UsageRow) (func(b *pgx.Batch), error) {
	if len(rows) == 0 {
		return nil, nil
	}
	if len(rows) == 1 {
		return usageInsertOne(rows[0])
	}
	n := len(rows)
	var (
		at                                                         = make([]time.Time, 0, n)
		agent, key, sid, eid, channel, room, sender, name, pr, mdl = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		in, out, cr, cw                                            = make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
		cost                                                       = make([]float64, 0, n)
	)
	for _, r := range rows {
		if err := sessions.CheckUsageRow(r); err != nil {
			return nil, fmt.Errorf("pgstore: usage: record: %w", err)
		}
		at = append(at, r.At.UTC())
		agent, key, sid, eid = append(agent, r.AgentID), append(key, r.SessionKey), append(sid, r.SessionID), append(eid, r.EntryID)
		channel, room, sender, name = append(channel, r.Channel), append(room, r.Room), append(sender, r.SenderID), append(name, r.SenderName)
		pr, mdl = append(pr, r.Provider), append(mdl, r.Model)
		in, out, cr, cw = append(in, r.Input), append(out, r.Output), append(cr, r.CacheRead), append(cw, r.CacheWrite)
		cost = append(cost, r.Cost)
	}
	return func(b *pgx.Batch) {
		b.Queue(`INSERT INTO usage (at, agent_id, session_key, session_id, entry_id, channel, room,
			sender_id, sender_name, provider, model, input, output, cache_read, cache_write, cost)
		SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[],
			$16::float8[])
		ON CONFLICT (agent_id, session_id, at) DO NOTHING`,
			at, agent, key, sid, eid, channel, room, sender, name, pr, mdl, in, out, cr, cw, cost)
	}, nil
}

// usageInsertOneSQL is usageInsert's statement for one row, a turn's: its
// values as scalars, where sixteen one-element arrays cost the server an
// array decode each and a function scan (issue 21).
const usageInsertOneSQL = `INSERT INTO usage (at, agent_id, session_key, session_id, entry_id, channel, room,
	sender_id, sender_name, provider, model, input, output, cache_read, cache_write, cost)
	VALUES ($1::timestamptz, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text,
		$10::text, $11::text, $12::bigint, $13::bigint, $14::bigint, $15::bigint, $16::float8)
	ON CONFLICT (agent_id, session_id, at) DO NOTHING`

// usageInsertOne is usageInsert of the one row r.
func usageInsertOne(r sessions.UsageRow) (func(b *pgx.Batch), error) {
	if err := sessions.CheckUsageRow(r); err != nil {
		return nil, fmt.Errorf("pgstore: usage: record: %w", err)
	}
	return func(b *pgx.Batch) {
		b.Queue(usageInsertOneSQL, r.At.UTC(), r.AgentID, r.SessionKey, r.SessionID, r.EntryID, r.Channel, r.Room,
			r.SenderID, r.SenderName, r.Provider, r.Model, r.Input, r.Output, r.CacheRead, r.CacheWrite, r.Cost)
	}, nil
}

// usageGroup is the SQL of each grouping dimension: the bucket key and its
// label. Only these constant texts become SQL; the filter's values are
// parameters.
var usageGroup = map[string][2]string{
	sessions.UsageByTotal:   {`'total'`, `''`},
	sessions.UsageBySender:  {`CASE WHEN sender_id = '' THEN '' ELSE channel || ':' || sender_id END`, `coalesce((array_agg(sender_name ORDER BY at DESC) FILTER (WHERE sender_name <> ''))[1], '')`},
	sessions.UsageBySession: {`session_key`, `''`},
	sessions.UsageByRoom:    {`room`, `''`},
	sessions.UsageByModel:   {`provider || '/' || model`, `''`},
	sessions.UsageByDay:     {`to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`, `''`},
	sessions.UsageByAgent:   {`agent_id`, `''`},
}

// Query implements sessions.UsageLog.
func (u usageLog) Query(ctx context.Context, f sessions.UsageFilter) ([]sessions.UsageBucket, error) {
	ctx = withOp(ctx, OpUsage)
	if err := sessions.CheckUsageFilter(f); err != nil {
		return nil, err
	}
	g := usageGroup[f.By]
	where, args := usageWhere(f)
	q := `SELECT ` + g[0] + ` AS k, ` + g[1] + `, count(*), coalesce(sum(input), 0), coalesce(sum(output), 0),
		coalesce(sum(cache_read), 0), coalesce(sum(cache_write), 0), coalesce(sum(cost), 0) FROM usage` + where + ` GROUP BY k`
	rows, err := u.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: usage: query: %w", err)
	}
	var out []sessions.UsageBucket
	var b sessions.UsageBucket
	_, err = pgx.ForEachRow(rows, []any{&b.Key, &b.Label, &b.Turns, &b.Input, &b.Output, &b.CacheRead, &b.CacheWrite, &b.Cost}, func() error {
		out = append(out, b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: usage: query: %w", err)
	}
	sessions.SortUsage(f.By, out)
	return out, nil
}

// usageWhere is the WHERE clause of f ("" when f selects every row) and
// its parameters.
func usageWhere(f sessions.UsageFilter) (string, []any) {
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.AgentID != "" {
		arg("agent_id = ?", f.AgentID)
	}
	if f.SessionKey != "" {
		arg("session_key = ?", f.SessionKey)
	}
	if f.SenderID != "" {
		arg("channel = ?", f.Channel)
		arg("sender_id = ?", f.SenderID)
	}
	if !f.Since.IsZero() {
		arg("at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		arg("at < ?", f.Until.UTC())
	}
	if len(where) == 0 {
		return "", nil
	}
	return ` WHERE ` + strings.Join(where, " AND "), args
}

// Rows implements sessions.UsageLog, by agent and time.
func (u usageLog) Rows(ctx context.Context, f sessions.UsageFilter, fn func(sessions.UsageRow) error) error {
	ctx = withOp(ctx, OpUsage)
	if err := sessions.CheckUsageFilter(f); err != nil {
		return err
	}
	where, args := usageWhere(f)
	rows, err := u.db.pool.Query(ctx, `SELECT at, agent_id, session_key, session_id, entry_id, channel, room, sender_id,
		sender_name, provider, model, input, output, cache_read, cache_write, cost FROM usage`+where+` ORDER BY agent_id, at, id`, args...)
	if err != nil {
		return fmt.Errorf("pgstore: usage: rows: %w", err)
	}
	var r sessions.UsageRow
	_, err = pgx.ForEachRow(rows, []any{&r.At, &r.AgentID, &r.SessionKey, &r.SessionID, &r.EntryID, &r.Channel, &r.Room, &r.SenderID,
		&r.SenderName, &r.Provider, &r.Model, &r.Input, &r.Output, &r.CacheRead, &r.CacheWrite, &r.Cost}, func() error {
		r.At = r.At.UTC()
		return fn(r)
	})
	if err != nil {
		return fmt.Errorf("pgstore: usage: rows: %w", err)
	}
	return nil
}

// Refs implements sessions.UsageLog.
func (u usageLog) Refs(ctx context.Context, agentID string) (map[sessions.UsageRef]bool, error) {
	ctx = withOp(ctx, OpUsage)
	if !routing.ValidID(agentID) {
		return nil, fmt.Errorf("pgstore: usage: refs: agent %q: not a valid agent id", agentID)
	}
	rows, err := u.db.pool.Query(ctx, `SELECT session_id, at FROM usage WHERE agent_id = $1`, agentID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: usage: refs: %w", err)
	}
	out := map[sessions.UsageRef]bool{}
	var sid string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&sid, &at}, func() error {
		out[sessions.UsageRef{SessionID: sid, At: at.UnixMilli()}] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: usage: refs: %w", err)
	}
	return out, nil
}

var _ sessions.UsageLog = usageLog{}
