package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// subagentKeyRE matches agent:<id>:subagent:<id> (ids hold no ':'): the
// sessions maxEntries archives first.
const subagentKeyRE = `^agent:[^:]+:subagent:[^:]+$`

// Maintain applies the maintenance policy of SPEC §3.3 to x's agent, as
// the files backend's Store.Maintain does: entries not updated within
// pruneAfter are archived ("pruned"); past maxEntries the oldest are
// archived, subagent sessions first; a session active within the last
// minute is never touched; archived sessions past archiveRetention are
// forgotten with their transcripts. In warn mode it only reports. Each
// archive is its own transaction that re-checks the entry under its row
// lock, so a session touched meanwhile is kept.
func (x *Index) Maintain(ctx context.Context, cfg sessions.Maintenance) (sessions.MaintenanceReport, error) {
	cfg = cfg.WithDefaults()
	rep := sessions.MaintenanceReport{AgentID: x.agentID, Enforced: cfg.Mode != sessions.MaintenanceWarn}
	now := x.db.clock()
	active := now.Add(-sessions.ActiveWindow)
	stale := now.Add(-cfg.PruneAfter)
	var err error
	rep.Pruned, err = x.keys(ctx, `SELECT session_key FROM entries
		WHERE agent_id = $1 AND updated_at < $2 AND last_interaction_at < $3 AND updated_at < $3
		ORDER BY session_key`, x.agentID, stale, active)
	if err != nil {
		return rep, fmt.Errorf("pgstore: maintain %s: prune: %w", x.agentID, err)
	}
	var total int
	if err := x.db.pool.QueryRow(ctx, `SELECT count(*) FROM entries WHERE agent_id = $1`, x.agentID).Scan(&total); err != nil {
		return rep, fmt.Errorf("pgstore: maintain %s: count: %w", x.agentID, err)
	}
	if over := total - len(rep.Pruned) - cfg.MaxEntries; over > 0 {
		rep.Capped, err = x.keys(ctx, `SELECT session_key FROM entries
			WHERE agent_id = $1 AND NOT (session_key = ANY($2)) AND last_interaction_at < $3 AND updated_at < $3
			ORDER BY (session_key ~ '`+subagentKeyRE+`') DESC, updated_at, session_key LIMIT $4`,
			x.agentID, rep.Pruned, active, over)
		if err != nil {
			return rep, fmt.Errorf("pgstore: maintain %s: cap: %w", x.agentID, err)
		}
	}
	retention := now.Add(-cfg.ArchiveRetention)
	if !rep.Enforced {
		rep.ArchivesRemoved, err = x.keys(ctx, `SELECT session_id FROM archived WHERE agent_id = $1 AND archived_at < $2
			ORDER BY session_id`, x.agentID, retention)
		if err != nil {
			return rep, fmt.Errorf("pgstore: maintain %s: archives: %w", x.agentID, err)
		}
		x.logMaintenance(rep, cfg)
		return rep, nil
	}
	for _, k := range rep.Pruned {
		if err := x.archiveIf(ctx, k, now, `updated_at < $3 AND last_interaction_at < $4 AND updated_at < $4`, stale, active); err != nil {
			return rep, fmt.Errorf("pgstore: maintain %s: prune %s: %w", x.agentID, k, err)
		}
	}
	for _, k := range rep.Capped {
		if err := x.archiveIf(ctx, k, now, `last_interaction_at < $4 AND updated_at < $4 AND $3::timestamptz IS NOT NULL`, now, active); err != nil {
			return rep, fmt.Errorf("pgstore: maintain %s: cap %s: %w", x.agentID, k, err)
		}
	}
	if rep.ArchivesRemoved, err = x.expireArchives(ctx, retention); err != nil {
		return rep, fmt.Errorf("pgstore: maintain %s: archives: %w", x.agentID, err)
	}
	x.logMaintenance(rep, cfg)
	return rep, nil
}

// archiveIf archives key k's session (reason "pruned", as deleted) if its
// row still satisfies cond ($1 agent, $2 key, $3 and $4 the arguments).
func (x *Index) archiveIf(ctx context.Context, k string, now time.Time, cond string, a3, a4 time.Time) error {
	return pgx.BeginFunc(ctx, x.db.pool, func(tx pgx.Tx) error {
		e, err := scanEntry(tx.QueryRow(ctx, `SELECT `+entryColumns+` FROM entries
			WHERE agent_id = $1 AND session_key = $2 AND `+cond+` FOR UPDATE`, x.agentID, k, a3, a4))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // touched, reset or deleted meanwhile
		}
		if err != nil {
			return err
		}
		if err := x.archive(ctx, tx, k, e, "pruned", true, now); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM entries WHERE agent_id = $1 AND session_key = $2`, x.agentID, k)
		return err
	})
}

// expireArchives forgets the archived sessions past retention and deletes
// the transcripts that no entry and no remaining archive refers to.
func (x *Index) expireArchives(ctx context.Context, before time.Time) ([]string, error) {
	var ids []string
	err := pgx.BeginFunc(ctx, x.db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM archived WHERE agent_id = $1 AND archived_at < $2 RETURNING session_id`, x.agentID, before)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return err
		}
		orphan := `SELECT u.sid FROM unnest($1::text[]) AS u(sid)
			WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.session_id = u.sid)
			AND NOT EXISTS (SELECT 1 FROM archived a WHERE a.session_id = u.sid)`
		if _, err := tx.Exec(ctx, `DELETE FROM transcript_entries WHERE session_id IN (`+orphan+`)`, ids); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM transcript_heads WHERE session_id IN (`+orphan+`)`, ids)
		return err
	})
	return ids, err
}

func (x *Index) keys(ctx context.Context, sql string, args ...any) ([]string, error) {
	rows, err := x.db.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (x *Index) logMaintenance(rep sessions.MaintenanceReport, cfg sessions.Maintenance) {
	if len(rep.Pruned)+len(rep.Capped)+len(rep.ArchivesRemoved) == 0 {
		return
	}
	msg := "session maintenance archived sessions"
	if !rep.Enforced {
		msg = "session maintenance would archive sessions (mode warn)"
	}
	x.db.log.Info(msg, zap.String("agent_id", x.agentID), zap.Int("pruned", len(rep.Pruned)), zap.Int("capped", len(rep.Capped)),
		zap.Int("archives_expired", len(rep.ArchivesRemoved)), zap.Int("max_entries", cfg.MaxEntries))
}
