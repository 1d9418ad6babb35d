package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// usageLog implements sessions.UsageLog on the usage table: Record is one
// lazy writer job inserting every row (writer.doLazy: committed, not yet
// fsynced, when it returns; the files backend's ledger is not fsynced
// either, and `gateway usage rebuild` restores rows a machine crash lost);
// Query reads the rows its filter selects
// (by the indexes of agent, time, sender and session) and sums them as the
// files backend does, in the order they were recorded.
type usageLog struct{ db *DB }

var _ sessions.UsageLog = usageLog{}

// Usage returns the usage ledger stored in the database.
func (db *DB) Usage() sessions.UsageLog { return usageLog{db} }

// Record implements sessions.UsageLog; a row whose agent, session id and
// time are stored already is ignored.
func (u usageLog) Record(ctx context.Context, rows ...sessions.UsageRow) error {
	if len(rows) == 0 {
		return nil
	}
	for _, r := range rows {
		if err := sessions.CheckUsageRow(r); err != nil {
			return fmt.Errorf("sqlitestore: usage: record: %w", err)
		}
	}
	err := u.db.w.doLazy(ctx, func(tx *wtx) error {
		for _, r := range rows {
			if _, err := tx.Exec(`INSERT INTO usage (at, agent_id, session_key, session_id, entry_id, channel, room,
				sender_id, sender_name, provider, model, input, output, cache_read, cache_write, cost)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, session_id, at) DO NOTHING`,
				r.At.UnixMilli(), r.AgentID, r.SessionKey, r.SessionID, r.EntryID, r.Channel, r.Room, r.SenderID,
				r.SenderName, r.Provider, r.Model, r.Input, r.Output, r.CacheRead, r.CacheWrite, r.Cost); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: usage: record %d rows: %w", len(rows), err)
	}
	return nil
}

// usageWhere is the WHERE clause of f ("" when f selects every row) and
// its parameters; only these constant texts become SQL.
func usageWhere(f sessions.UsageFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
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
		arg("at >= ?", ceilMilli(f.Since))
	}
	if !f.Until.IsZero() {
		arg("at < ?", ceilMilli(f.Until))
	}
	if len(where) == 0 {
		return "", nil
	}
	return ` WHERE ` + strings.Join(where, " AND "), args
}

// ceilMilli is the first millisecond at or after t: rows are whole
// milliseconds, so at >= ceil(t) is at >= t.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// Rows implements sessions.UsageLog, by agent and time.
func (u usageLog) Rows(ctx context.Context, f sessions.UsageFilter, fn func(sessions.UsageRow) error) error {
	if err := sessions.CheckUsageFilter(f); err != nil {
		return err
	}
	if err := u.rows(ctx, f, ` ORDER BY agent_id, at, id`, fn); err != nil {
		return fmt.Errorf("sqlitestore: usage: rows: %w", err)
	}
	return nil
}

func (u usageLog) rows(ctx context.Context, f sessions.UsageFilter, order string, fn func(sessions.UsageRow) error) error {
	where, args := usageWhere(f)
	return u.db.query(ctx, func(rows *sql.Rows) error {
		var (
			r  sessions.UsageRow
			at int64
		)
		if err := rows.Scan(&at, &r.AgentID, &r.SessionKey, &r.SessionID, &r.EntryID, &r.Channel, &r.Room, &r.SenderID,
			&r.SenderName, &r.Provider, &r.Model, &r.Input, &r.Output, &r.CacheRead, &r.CacheWrite, &r.Cost); err != nil {
			return err
		}
		r.At = time.UnixMilli(at).UTC()
		return fn(r)
	}, `SELECT at, agent_id, session_key, session_id, entry_id, channel, room, sender_id,
		sender_name, provider, model, input, output, cache_read, cache_write, cost FROM usage`+where+order, args...)
}

// Query implements sessions.UsageLog.
func (u usageLog) Query(ctx context.Context, f sessions.UsageFilter) ([]sessions.UsageBucket, error) {
	if err := sessions.CheckUsageFilter(f); err != nil {
		return nil, err
	}
	m := map[string]*sessions.UsageBucket{}
	labelAt := map[string]time.Time{}
	err := u.rows(ctx, f, ` ORDER BY id`, func(r sessions.UsageRow) error {
		k := usageKey(r, f.By)
		b, ok := m[k]
		if !ok {
			b = &sessions.UsageBucket{Key: k}
			m[k] = b
		}
		b.Add(r)
		if f.By == sessions.UsageBySender && r.SenderName != "" && !r.At.Before(labelAt[k]) {
			b.Label, labelAt[k] = r.SenderName, r.At
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: usage: query: %w", err)
	}
	out := make([]sessions.UsageBucket, 0, len(m))
	for _, b := range m {
		out = append(out, *b)
	}
	sessions.SortUsage(f.By, out)
	return out, nil
}

// usageKey is the bucket key of r under dimension by.
func usageKey(r sessions.UsageRow, by string) string {
	switch by {
	case sessions.UsageBySender:
		return r.SenderKey()
	case sessions.UsageBySession:
		return r.SessionKey
	case sessions.UsageByRoom:
		return r.Room
	case sessions.UsageByModel:
		return r.Provider + "/" + r.Model
	case sessions.UsageByDay:
		return r.At.UTC().Format(time.DateOnly)
	case sessions.UsageByAgent:
		return r.AgentID
	}
	return "total"
}

// Refs implements sessions.UsageLog.
func (u usageLog) Refs(ctx context.Context, agentID string) (map[sessions.UsageRef]bool, error) {
	if !routing.ValidID(agentID) {
		return nil, fmt.Errorf("sqlitestore: usage: refs: agent %q: not a valid agent id", agentID)
	}
	out := map[sessions.UsageRef]bool{}
	err := u.db.query(ctx, func(r *sql.Rows) error {
		var (
			sid string
			at  int64
		)
		if err := r.Scan(&sid, &at); err != nil {
			return err
		}
		out[sessions.UsageRef{SessionID: sid, At: at}] = true
		return nil
	}, `SELECT session_id, at FROM usage WHERE agent_id = ?`, agentID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: usage: refs: %w", err)
	}
	return out, nil
}
