package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Index is one agent's session index: the files backend's sessions.json
// (filestore.Store) as rows of the entries table. Every write is durable
// when its method returns.
type Index struct {
	db      *DB
	agentID string
	// reset returns the reset policies Begin evaluates; nil never resets.
	reset func() sessions.ResetConfig
	// maint returns the maintenance policy whose maxEntries creations
	// enforce (maintenance_cap.go); nil caps nothing (the CLI, tests).
	maint     func() sessions.Maintenance
	capWarnAt *atomic.Int64 // the last warning of a cap not met, unix ns
}

// Index returns agentID's session index. reset gives the reset policies
// Begin applies (read on every call, so a reloaded config applies at once);
// nil means a session never rolls over by itself.
func (db *DB) Index(agentID string, reset func() sessions.ResetConfig) *Index {
	return &Index{db: db, agentID: agentID, reset: reset}
}

// AgentID is the agent whose sessions this index holds.
func (x *Index) AgentID() string { return x.agentID }

// entryColumns are the columns of an Entry, in scanEntry's order.
const entryColumns = `session_key, session_id, created_at, session_started_at, last_interaction_at, updated_at,
	title, channel, chat_type, last_channel, last_to, last_account_id, last_thread_id, last_from,
	display_name, model, provider, model_override, queue_mode, queue_debounce_ms, queue_cap, queue_drop,
	input_tokens, output_tokens, total_tokens, context_tokens, compaction_count, message_count,
	spawned_by, parent_session_key, label, compaction_offset,
	provider_override, thinking_level, group_activation,
	verbose_level, reasoning_level, send_policy, response_usage,
	delivery_channel, delivery_to, delivery_account_id, delivery_thread_id,
	subagent_cleanup, run_timeout_seconds, run_started_at`

// entryArgs are e's values for entryColumns, after the agent id ($1).
func entryArgs(agentID string, e *sessions.Entry) []any {
	return []any{agentID, e.SessionKey, e.SessionID, e.CreatedAt, e.SessionStartedAt, e.LastInteractionAt, e.UpdatedAt,
		e.Title, e.Channel, e.ChatType, e.LastChannel, e.LastTo, e.LastAccountID, e.LastThreadID, e.LastFrom,
		e.DisplayName, e.Model, e.Provider, e.ModelOverride, e.QueueMode, e.QueueDebounceMs, e.QueueCap, e.QueueDrop,
		e.InputTokens, e.OutputTokens, e.TotalTokens, e.ContextTokens, e.CompactionCount, e.MessageCount,
		e.SpawnedBy, e.ParentSessionKey, e.Label, e.CompactionOffset,
		e.ProviderOverride, e.ThinkingLevel, e.GroupActivation,
		e.VerboseLevel, e.ReasoningLevel, e.SendPolicy, e.ResponseUsage,
		e.DeliveryContext.Channel, e.DeliveryContext.To, e.DeliveryContext.AccountID, e.DeliveryContext.ThreadID,
		e.SubagentCleanup, e.RunTimeoutSeconds, e.RunStartedAt}
}

// insertEntry writes a new row; it fails with a unique violation when the
// key (or the session id) exists.
const insertEntry = `INSERT INTO entries (agent_id, ` + entryColumns + `) VALUES
	($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,
	 $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40,
	 $41, $42, $43, $44, $45, $46, $47)`

// updateEntry replaces every column of the row of ($1, $2).
const updateEntry = `UPDATE entries SET session_id = $3, created_at = $4, session_started_at = $5,
	last_interaction_at = $6, updated_at = $7, title = $8, channel = $9, chat_type = $10, last_channel = $11,
	last_to = $12, last_account_id = $13, last_thread_id = $14, last_from = $15, display_name = $16, model = $17,
	provider = $18, model_override = $19, queue_mode = $20, queue_debounce_ms = $21, queue_cap = $22,
	queue_drop = $23, input_tokens = $24, output_tokens = $25, total_tokens = $26, context_tokens = $27,
	compaction_count = $28, message_count = $29, spawned_by = $30, parent_session_key = $31, label = $32,
	compaction_offset = $33, provider_override = $34, thinking_level = $35, group_activation = $36,
	verbose_level = $37, reasoning_level = $38, send_policy = $39, response_usage = $40,
	delivery_channel = $41, delivery_to = $42, delivery_account_id = $43, delivery_thread_id = $44,
	subagent_cleanup = $45, run_timeout_seconds = $46, run_started_at = $47
	WHERE agent_id = $1 AND session_key = $2`

func scanEntry(row pgx.Row) (sessions.Entry, error) {
	var e sessions.Entry
	err := row.Scan(&e.SessionKey, &e.SessionID, &e.CreatedAt, &e.SessionStartedAt, &e.LastInteractionAt, &e.UpdatedAt,
		&e.Title, &e.Channel, &e.ChatType, &e.LastChannel, &e.LastTo, &e.LastAccountID, &e.LastThreadID, &e.LastFrom,
		&e.DisplayName, &e.Model, &e.Provider, &e.ModelOverride, &e.QueueMode, &e.QueueDebounceMs, &e.QueueCap, &e.QueueDrop,
		&e.InputTokens, &e.OutputTokens, &e.TotalTokens, &e.ContextTokens, &e.CompactionCount, &e.MessageCount,
		&e.SpawnedBy, &e.ParentSessionKey, &e.Label, &e.CompactionOffset,
		&e.ProviderOverride, &e.ThinkingLevel, &e.GroupActivation,
		&e.VerboseLevel, &e.ReasoningLevel, &e.SendPolicy, &e.ResponseUsage,
		&e.DeliveryContext.Channel, &e.DeliveryContext.To, &e.DeliveryContext.AccountID, &e.DeliveryContext.ThreadID,
		&e.SubagentCleanup, &e.RunTimeoutSeconds, &e.RunStartedAt)
	e.CreatedAt, e.SessionStartedAt = e.CreatedAt.UTC(), e.SessionStartedAt.UTC()
	e.LastInteractionAt, e.UpdatedAt = e.LastInteractionAt.UTC(), e.UpdatedAt.UTC()
	return e, err
}

// keyString checks that key belongs to this index's agent.
func (x *Index) keyString(key routing.Key) (string, error) {
	if key.IsZero() {
		return "", errors.New("empty session key")
	}
	if key.Agent != x.agentID {
		return "", fmt.Errorf("key %q belongs to agent %q, not %q", key.String(), key.Agent, x.agentID)
	}
	return key.String(), nil
}

// queryer is what reads need: the pool or a transaction.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (x *Index) get(ctx context.Context, q queryer, k string, forUpdate bool) (sessions.Entry, bool, error) {
	sql := `SELECT ` + entryColumns + ` FROM entries WHERE agent_id = $1 AND session_key = $2`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	e, err := scanEntry(q.QueryRow(ctx, sql, x.agentID, k))
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Entry{}, false, nil
	}
	if err != nil {
		return sessions.Entry{}, false, err
	}
	return e, true, nil
}

// Get returns the entry for key.
func (x *Index) Get(ctx context.Context, key routing.Key) (sessions.Entry, bool, error) {
	ctx = withOp(ctx, OpIndex)
	k, err := x.keyString(key)
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("pgstore: get: %w", err)
	}
	e, ok, err := x.get(ctx, x.db.pool, k, false)
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("pgstore: get: %w", err)
	}
	return e, ok, nil
}

// GetByID returns the current entry of this agent whose session id is id.
func (x *Index) GetByID(ctx context.Context, id string) (sessions.Entry, bool, error) {
	ctx = withOp(ctx, OpIndex)
	if !isSessionID(id) {
		return sessions.Entry{}, false, nil
	}
	e, err := scanEntry(x.db.pool.QueryRow(ctx,
		`SELECT `+entryColumns+` FROM entries WHERE session_id = $1 AND agent_id = $2`, id, x.agentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Entry{}, false, nil
	}
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("pgstore: get by id: %w", err)
	}
	return e, true, nil
}

// isSessionID reports whether id can name a session: both backends only
// ever make canonical UUIDs. Anything else (text PostgreSQL would refuse,
// such as a NUL byte) is simply no session, answered without a query.
func isSessionID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// List returns every entry of the agent, most recently updated first (ties
// by key), like filestore.Store.List.
func (x *Index) List(ctx context.Context) ([]sessions.Entry, error) {
	ctx = withOp(ctx, OpIndex)
	out, err := x.list(ctx, `SELECT `+entryColumns+` FROM entries WHERE agent_id = $1
		ORDER BY updated_at DESC, session_key`, x.agentID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list: %w", err)
	}
	return out, nil
}

// Recent returns the n most recently updated entries, in List's order:
// the server reads the agent's rows and keeps the n newest (a top-N sort;
// updated_at has no index, so a turn's updates of it are heap-only:
// migration 00021).
func (x *Index) Recent(ctx context.Context, n int) ([]sessions.Entry, error) {
	ctx = withOp(ctx, OpIndex)
	if n <= 0 {
		return nil, nil
	}
	out, err := x.list(ctx, `SELECT `+entryColumns+` FROM entries WHERE agent_id = $1
		ORDER BY updated_at DESC, session_key LIMIT $2`, x.agentID, n)
	if err != nil {
		return nil, fmt.Errorf("pgstore: recent: %w", err)
	}
	return out, nil
}

func (x *Index) list(ctx context.Context, sql string, args ...any) ([]sessions.Entry, error) {
	rows, err := x.db.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sessions.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Archived returns the sessions of key that were reset, deleted or
// switched away from, newest first: at most sessions.MaxArchivedPerKey, as
// the files backend keeps.
func (x *Index) Archived(ctx context.Context, key routing.Key) ([]sessions.Archived, error) {
	ctx = withOp(ctx, OpIndex)
	k, err := x.keyString(key)
	if err != nil {
		return nil, fmt.Errorf("pgstore: archived: %w", err)
	}
	rows, err := x.db.pool.Query(ctx, `SELECT session_id, reason, archived_at, title, session_started_at, updated_at,
		message_count, total_tokens, deleted FROM archived WHERE agent_id = $1 AND session_key = $2
		ORDER BY archived_at DESC, id DESC LIMIT $3`, x.agentID, k, sessions.MaxArchivedPerKey)
	if err != nil {
		return nil, fmt.Errorf("pgstore: archived: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessions.Archived, error) {
		var a sessions.Archived
		err := r.Scan(&a.SessionID, &a.Reason, &a.ArchivedAt, &a.Title, &a.SessionStartedAt, &a.UpdatedAt,
			&a.MessageCount, &a.TotalTokens, &a.Deleted)
		a.ArchivedAt, a.SessionStartedAt, a.UpdatedAt = a.ArchivedAt.UTC(), a.SessionStartedAt.UTC(), a.UpdatedAt.UTC()
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: archived: %w", err)
	}
	return out, nil
}
