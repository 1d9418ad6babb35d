package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/transfer"
)

func storageCmd(cfgPath *string) *cobra.Command {
	return group("storage", "Move the durable state between storage backends", storageMigrateCmd(cfgPath))
}

// migrateFlags are the flags of `storage migrate`.
type migrateFlags struct {
	from, to       string
	stateDir       string
	sqliteStateDir string
	postgresURL    string
	overwrite      bool
	workers        int
}

// backendNames are the backends `storage migrate` moves between.
var backendNames = []string{"files", "sqlite", "postgres"}

const migrateLong = `Copy the state from one storage backend to another (files, sqlite,
postgres, in any direction), then verify the copy.

It moves the sessions (index entries, archived sessions, transcripts entry
by entry), the journal's pending records, unsent replies and drafts,
pairing, channel cursors, room history, the usage ledger, the dead letters,
the agents' memory notes (renumbered from 1 per scope), the scheduled jobs
and the budget counters (what each member, room and agent spent today and
this month). It verifies
the counts, every key's state and transcript lines, the output of ` + "`sessions show KEY --context --json`" + `
for every session rendered from both, the journal's pending work, pairing,
cursors, room history and the budget counters; any difference is printed and the exit code is 1.

The files side is --state-dir (default: the config's stateDir); the sqlite
side is the database file gateway.sqlite in --sqlite-state-dir (default:
the config's stateDir, so files and sqlite can share one state dir); the
postgres side is --postgres-url (default: the config's storage.postgres).

It refuses while a daemon holds either side (files and sqlite: the state
dir's gateway.pid lock; postgres: the daemon advisory lock), and holds them
itself until it is done. Running it twice gives the same target: what the
target already holds with the same content is skipped; a session, pairing
channel or cursor it holds with other content is an error naming it,
unless --overwrite.

Clocks: PostgreSQL keeps microseconds, files and sqlite nanoseconds. The
copy cuts the clocks of entries and archived sessions to UTC microseconds
and the verification compares at that resolution; transcript timestamps
are text and move unchanged. The message tool's record of message ids does
not move: after a migration it acts only on messages seen since.`

func storageMigrateCmd(cfgPath *string) *cobra.Command {
	var f migrateFlags
	c := &cobra.Command{
		Use:   "migrate --from files|sqlite|postgres --to files|sqlite|postgres",
		Short: "Copy the session state between the files, sqlite and postgres backends, losslessly, and verify it",
		Long:  migrateLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				return runMigrate(env.ctx, env.out, env.cfg, f)
			})
		},
	}
	c.Flags().StringVar(&f.from, "from", "", "the backend to read: files, sqlite or postgres")
	c.Flags().StringVar(&f.to, "to", "", "the backend to write: files, sqlite or postgres")
	c.Flags().StringVar(&f.stateDir, "state-dir", "", "the files side's state dir (default: the config's stateDir)")
	c.Flags().StringVar(&f.sqliteStateDir, "sqlite-state-dir", "", "the state dir of the sqlite side's gateway.sqlite (default: the config's stateDir)")
	c.Flags().StringVar(&f.postgresURL, "postgres-url", "", "the postgres side's connection URL (default: the config's storage.postgres)")
	c.Flags().BoolVar(&f.overwrite, "overwrite", false, "replace keys the target holds with other content")
	c.Flags().IntVar(&f.workers, "workers", transfer.DefaultWorkers, "keys copied at once")
	return c
}

func (f migrateFlags) validate() error {
	for _, b := range []struct{ flag, v string }{{"--from", f.from}, {"--to", f.to}} {
		if !slices.Contains(backendNames, b.v) {
			return usage("storage migrate: %s %q: want files, sqlite or postgres", b.flag, b.v)
		}
	}
	if f.from == f.to {
		return usage("storage migrate: --from and --to are both %s", f.from)
	}
	if f.workers < 1 {
		return usage("storage migrate: --workers %d: want at least 1", f.workers)
	}
	return nil
}

// side is one backend of a migration, opened and locked.
type side struct {
	sessions.Importer
	// where describes it for the summary (state dir or database).
	where string
	// store opens agent's sessions as the backend serves them (for
	// `sessions show`).
	store func(agent string) (sessions.AgentStore, error)
	// delivery opens a new handle on the journal and outbox; done closes
	// it. The copy and the verification each use their own: a handle
	// leaves the records it accepted out of Pending.
	delivery func() (d sessions.Delivery, done func(), err error)
	// pairing and cursors are the backend's (the source's cursors must
	// list their scopes, sessions.CursorScopes).
	pairing sessions.PairingState
	cursors sessions.Cursors
	// rooms is the room history (the source's must list its rooms,
	// sessions.RoomLister).
	rooms sessions.RoomLog
	// usage is the usage ledger.
	usage sessions.UsageLog
	// dead holds the dead letters.
	dead sessions.DeadLetters
	// memory holds the agents' notes.
	memory sessions.Memory
	// jobs holds the scheduled jobs.
	jobs sessions.Jobs
	// limits holds the budget counters (the source's must list them,
	// sessions.LimitLister).
	limits sessions.LimitCounters
	close  func()
}

func runMigrate(ctx context.Context, out io.Writer, cfg *configs.Config, f migrateFlags) error {
	if f.postgresURL == "" {
		f.postgresURL = configPostgresURL(cfg)
	}
	if f.postgresURL == "" && (f.from == "postgres" || f.to == "postgres") {
		return usage("storage migrate: --postgres-url is required (the config names no PostgreSQL server)")
	}
	locks := newDirLocks()
	from, err := openSide(ctx, cfg, f, f.from, false, locks)
	if err != nil {
		return err
	}
	defer from.close()
	to, err := openSide(ctx, cfg, f, f.to, true, locks)
	if err != nil {
		return err
	}
	defer to.close()
	fmt.Fprintf(out, "storage migrate: %s (%s) -> %s (%s)\n", from.Kind(), from.where, to.Kind(), to.where)
	if err := copyState(ctx, out, from, to, f); err != nil {
		return err
	}
	return verifyMigration(ctx, out, from, to, f.workers)
}

// openSide opens backend name as a migration's source (create false: it
// must exist) or target.
func openSide(ctx context.Context, cfg *configs.Config, f migrateFlags, name string, create bool, locks *dirLocks) (*side, error) {
	switch name {
	case "files":
		return openFilesSide(cfg, f, create, locks)
	case "sqlite":
		return openSQLiteSide(ctx, cfg, f, create, locks)
	default:
		return openPostgresSide(ctx, cfg, f, locks.op)
	}
}

// copyState copies the sessions, the journal's pending work, pairing and
// cursors, printing what it did.
func copyState(ctx context.Context, out io.Writer, from, to *side, f migrateFlags) error {
	st, err := transfer.Copy(ctx, from, to, transfer.Options{Overwrite: f.overwrite, Workers: f.workers})
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	printCopy(out, st)
	dc, err := copyDelivery(ctx, from, to)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  journal             %d pending records, %d unsent replies, %d drafts copied\n", dc.Pending, dc.Replies, dc.Drafts)
	pn, err := transfer.CopyPairing(ctx, from.pairing, to.pairing, f.overwrite)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	cn, err := transfer.CopyCursors(ctx, from.cursors, to.cursors, f.overwrite)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  pairing, cursors    %d channels, %d cursors copied\n", pn, cn)
	rn, err := transfer.CopyRooms(ctx, from.rooms, to.rooms, f.overwrite)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  room history        %d entries copied\n", rn)
	un, err := transfer.CopyUsage(ctx, from.usage, to.usage)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  usage ledger        %d rows copied\n", un)
	dn, err := transfer.CopyDeadLetters(ctx, from.dead, to.dead)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  dead letters        %d copied\n", dn)
	mn, err := transfer.CopyMemory(ctx, from.memory, to.memory, f.overwrite)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  memory notes        %d copied\n", mn)
	jn, err := transfer.CopyJobs(ctx, from.jobs, to.jobs, f.overwrite)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  scheduled jobs      %d copied\n", jn)
	ln, err := transfer.CopyLimits(ctx, from.limits, to.limits, f.overwrite)
	if err != nil {
		return fmt.Errorf("storage migrate: %w", err)
	}
	fmt.Fprintf(out, "  budget counters     %d copied\n", ln)
	return nil
}

// copyDelivery moves the journal's pending work (transfer.CopyDelivery)
// through new handles on both sides.
func copyDelivery(ctx context.Context, from, to *side) (transfer.DeliveryCounts, error) {
	a, doneA, err := from.delivery()
	if err != nil {
		return transfer.DeliveryCounts{}, err
	}
	defer doneA()
	b, doneB, err := to.delivery()
	if err != nil {
		return transfer.DeliveryCounts{}, err
	}
	defer doneB()
	return transfer.CopyDelivery(ctx, a, b)
}

// openFilesSide opens the state dir under the daemon's lock. A source must
// exist; a target is created.
func openFilesSide(cfg *configs.Config, f migrateFlags, create bool, locks *dirLocks) (*side, error) {
	abs, unlock, err := locks.lockDir(cmp.Or(f.stateDir, cfg.StateDir), create)
	if err != nil {
		return nil, err
	}
	// Passive: no maintenance and no counter repair; the copy moves the
	// state as it is, and nothing else writes it meanwhile.
	mgr, err := openFiles(abs, cfg.Session.LockTimeout)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("%s: %w", locks.op, err)
	}
	b := mgr.Backend()
	return &side{Importer: mgr.Transfer(), where: abs, store: b.Store, delivery: filesDelivery(cfg, abs),
		pairing: b.Pairing(), cursors: b.Cursors(), rooms: b.History(), usage: b.Usage(), dead: b.DeadLetters(), memory: b.Memory(), jobs: b.Jobs(), limits: b.Limits(), close: func() {
			_ = mgr.Close()
			unlock()
		}}, nil
}

// openPostgresSide connects (applying the schema migrations) and takes
// the daemon advisory lock exclusively; op names the command in errors.
func openPostgresSide(ctx context.Context, cfg *configs.Config, f migrateFlags, op string) (*side, error) {
	url := f.postgresURL
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url, MaxConns: int32(max(f.workers+2, cfg.Storage.Postgres.MaxConns)), Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	unlock, err := db.LockExclusive(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: stop the daemons using it first: %w", op, err)
	}
	return &side{Importer: db.Transfer(), where: db.Target(), store: postgresStores(db), delivery: postgresDelivery(db),
		pairing: db.Pairing(), cursors: db.Cursors(), rooms: db.RoomLog(pgstore.RoomLogOptions{Logger: zap.NewNop()}), usage: db.Usage(), dead: db.DeadLetters(), memory: db.Memory(), jobs: db.Jobs(), limits: db.Limits(), close: func() {
			unlock()
			db.Close()
		}}, nil
}

func printCopy(out io.Writer, st transfer.Stats) {
	fmt.Fprintf(out, "  agents              %d\n", st.Agents)
	fmt.Fprintf(out, "  sessions            %d (session keys %d: %d copied, %d already present)\n", st.Sessions, st.Keys, st.Copied, st.Skipped)
	fmt.Fprintf(out, "  archived            %d\n", st.Archived)
	fmt.Fprintf(out, "  transcript entries  %d\n", st.Lines)
	fmt.Fprintf(out, "  elapsed             %s\n", st.Elapsed.Round(time.Millisecond))
}
