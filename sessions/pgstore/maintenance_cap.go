package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// maintenance.maxEntries is enforced as sessions are created (issue 22),
// as the files backend does: after a creation commits, one transaction
// per agent at a time (an advisory lock, across replicas) counts the
// agent's entries and, past the cap, archives the oldest idle sessions
// (subagent sessions first) plus a slack of 5 %, so a burst counts and
// sorts once per that many creations. Idle means no pending record
// (queued or in a turn) and no reply not completely delivered in the
// delivery tables; candidates are taken FOR UPDATE SKIP LOCKED, so a
// session another transaction is touching is left alone. When every
// session over the cap has work pending the count stays over it and a
// warning says so (at most once a minute per agent); the creation itself
// always succeeds. The count can pass the cap by the creations other
// replicas have committed and not yet capped, for as long as their cap
// transactions wait for the lock.

// A creation through Begin's fast path counts the agent's entries in its
// own transaction (Index.create, no round trip or commit of its own) and
// skips the cap transaction while that count leaves capSlack free (issue
// 21: four round trips and a commit fewer per new session): creations
// that other replicas commit meanwhile are not in the count, and passing
// the cap would take more than capSlack of them at once; the next
// creation's count, or the hourly pass, caps them.

// countEntriesSQL counts an agent's entries (the cap's count).
const countEntriesSQL = `SELECT count(*) FROM entries WHERE agent_id = $1`

// capLimit is the maxEntries creations enforce, 0 for none.
func (x *Index) capLimit() int {
	if x.maint == nil {
		return 0
	}
	return max(x.maint().MaxEntries, 0)
}

// underCap reports whether count (the agent's entries, counted in the
// creation's transaction; -1 when not counted) leaves capSlack free under
// the cap, so that the creation needs no cap transaction.
func (x *Index) underCap(count int) bool {
	limit := x.capLimit()
	return limit > 0 && count >= 0 && count <= limit-capSlack(limit)
}

// capLockClass is the first key of the per-agent cap lock ("cap" in ASCII).
const capLockClass = 0x636170

// capWarnEvery spaces the warnings of a cap that cannot be met.
const capWarnEvery = time.Minute

// capSlack is how many sessions past the need a cap pass archives.
func capSlack(limit int) int { return max(limit/20, 1) }

// capAfter caps after created was added; a failure is logged, never the
// creation's (the next creation or the hourly pass caps).
func (x *Index) capAfter(ctx context.Context, created string) {
	if err := x.capCreated(ctx, created); err != nil && ctx.Err() == nil {
		x.db.log.Warn("session cap not enforced", zap.String("agent_id", x.agentID), zap.Error(err))
	}
}

// capCreated runs after created (a key) was added: it archives sessions
// down to maxEntries. A nil policy (x.maint) caps nothing.
func (x *Index) capCreated(ctx context.Context, created string) error {
	if x.maint == nil {
		return nil
	}
	cfg := x.maint()
	if cfg.MaxEntries <= 0 {
		return nil
	}
	now := x.db.clock()
	var (
		count int
		keys  []string
	)
	err := pgx.BeginFunc(ctx, x.db.pool, func(tx pgx.Tx) error {
		keys = keys[:0]
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, capLockClass, x.agentID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, countEntriesSQL, x.agentID).Scan(&count); err != nil {
			return err
		}
		over := count - cfg.MaxEntries
		if over <= 0 || cfg.Mode == sessions.MaintenanceWarn {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT `+entryColumns+` FROM entries e
			WHERE e.agent_id = $1 AND e.session_key <> $2
			AND NOT EXISTS (SELECT 1 FROM delivery_records r WHERE r.state = 'pending' AND r.session_key = e.session_key)
			AND NOT EXISTS (SELECT 1 FROM delivery_replies p WHERE p.session_key = e.session_key)
			ORDER BY (e.session_key ~ '`+subagentKeyRE+`') DESC, e.updated_at, e.session_key
			LIMIT $3 FOR UPDATE OF e SKIP LOCKED`, x.agentID, created, over+capSlack(cfg.MaxEntries))
		if err != nil {
			return err
		}
		var victims []sessions.Entry
		for rows.Next() {
			e, err := scanEntry(rows)
			if err != nil {
				rows.Close()
				return err
			}
			victims = append(victims, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, e := range victims {
			if err := x.archive(ctx, tx, e.SessionKey, e, "pruned", true, now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM entries WHERE agent_id = $1 AND session_key = $2`, x.agentID, e.SessionKey); err != nil {
				return err
			}
			keys = append(keys, e.SessionKey)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pgstore: cap %s at %d entries: %w", x.agentID, cfg.MaxEntries, err)
	}
	if len(keys) > 0 {
		x.db.log.Info("session maintenance archived sessions", zap.String("agent_id", x.agentID), zap.Int("capped", len(keys)),
			zap.Int("max_entries", cfg.MaxEntries))
	}
	if left := count - len(keys) - cfg.MaxEntries; left > 0 {
		x.warnCap(count-len(keys), cfg, left)
	}
	return nil
}

// warnCap logs, at most once per capWarnEvery per index, that the agent
// holds entries over maxEntries.
func (x *Index) warnCap(count int, cfg sessions.Maintenance, over int) {
	if x.capWarnAt == nil {
		return
	}
	now := time.Now().UnixNano()
	last := x.capWarnAt.Load()
	if now-last < int64(capWarnEvery) || !x.capWarnAt.CompareAndSwap(last, now) {
		return
	}
	why := "the other sessions have pending work (a turn queued, running or not delivered)"
	if cfg.Mode == sessions.MaintenanceWarn {
		why = "mode warn: nothing archived"
	}
	x.db.log.Warn("sessions over maintenance.maxEntries kept", zap.String("agent_id", x.agentID), zap.Int("entries", count),
		zap.Int("max_entries", cfg.MaxEntries), zap.Int("over", over), zap.String("reason", why))
}
