package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The connections of the group commit (writegroup.go). Its groups run as
// the batch's implicit transaction (writegroup_commit.go), so what each
// group used to set for its transaction alone is set once per connection,
// on pools of its own:
//
//   - plan_cache_mode = force_generic_plan, on both: the writes are short
//     statements that find their rows by key, whose generic plan is the
//     custom one; but with an array or many parameters the planner
//     estimates the generic plan dearer and plans each execution anew
//     (BeginTurn's statement took 1.1-1.7 ms of server CPU to plan against
//     0.3 ms to run, the marks 0.1-0.2 ms each: issue 21,
//     pg_stat_statements in cmd/gateway-bench);
//   - synchronous_commit = off on the pool of lazy writes (lazy.go);
//   - lock_timeout = groupLockTimeout, on both: a write that meets a row
//     another transaction holds (an operator's open transaction, a stuck
//     replica) gives up after it, not after the statement timeout, so the
//     group it travels in and every write queued behind that group (every
//     session's) is held up at most that long (writegroup_commit.go).
//
// Nothing else runs on these connections, so neither setting reaches a
// statement of another kind. Each pool opens its connections when first
// used and keeps at most writePoolConns (a committer uses one at a time;
// writes run alone after Close started may take a few).
const writePoolConns = 2

// groupLockTimeout is how long a write of the group commit waits for a row
// lock: far above the milliseconds the daemon's own transactions hold a
// row, far below the statement timeout (30 s by default) that bounded the
// wait before, during which all sessions' writes stalled.
const groupLockTimeout = time.Second

// writePool is the pool of the writes waiting for their WAL flush (flush)
// or of the lazy ones.
func (db *DB) writePool(flush bool) *pgxpool.Pool {
	if flush {
		return db.flushPool
	}
	return db.lazyPool
}

// openWritePools makes the group commit's pools from the main pool's
// config (same server, tracer and timeouts).
func (db *DB) openWritePools(ctx context.Context, base *pgxpool.Config) error {
	open := func(params map[string]string) (*pgxpool.Pool, error) {
		cfg := base.Copy()
		cfg.MaxConns = writePoolConns
		cfg.MinConns = 0
		for k, v := range params {
			if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
				cfg.ConnConfig.RuntimeParams[k] = v
			}
		}
		return pgxpool.NewWithConfig(ctx, cfg)
	}
	lockTimeout := strconv.FormatInt(groupLockTimeout.Milliseconds(), 10)
	flush, err := open(map[string]string{"plan_cache_mode": "force_generic_plan", "lock_timeout": lockTimeout})
	if err != nil {
		return fmt.Errorf("write pool: %w", err)
	}
	lazy, err := open(map[string]string{"plan_cache_mode": "force_generic_plan", "synchronous_commit": "off",
		"lock_timeout": lockTimeout})
	if err != nil {
		flush.Close()
		return fmt.Errorf("lazy write pool: %w", err)
	}
	db.flushPool, db.lazyPool = flush, lazy
	return nil
}

// closeWritePools closes the group commit's pools once it stopped.
func (db *DB) closeWritePools() {
	db.flushPool.Close()
	db.lazyPool.Close()
}
