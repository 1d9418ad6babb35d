package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"go.uber.org/zap"
)

// DefaultMaxConns is the pool size when Options.MaxConns is 0.
const DefaultMaxConns = 10

// DefaultConnectTimeout bounds each connection attempt unless the URL sets
// connect_timeout: an unreachable server fails fast and clearly.
const DefaultConnectTimeout = 10 * time.Second

// DefaultStatementTimeout is Options.StatementTimeout's default.
const DefaultStatementTimeout = 30 * time.Second

// Options configure Open.
type Options struct {
	// URL is a libpq connection URL or key=value string, e.g.
	// postgres:///gateway?host=/var/run/postgresql. It may hold a
	// password; no error or log line repeats it.
	URL string
	// MaxConns caps the pool (DefaultMaxConns when 0).
	MaxConns int32
	// StatementTimeout is the server-side limit of every statement
	// (DefaultStatementTimeout when 0, none when negative): a statement
	// stuck behind a lock or a slow disk fails and its transaction rolls
	// back, so no session stays wedged. A statement_timeout in the URL wins.
	StatementTimeout time.Duration
	// Logger receives migration and connection events; nil discards them.
	Logger *zap.Logger
	// Now is the clock of the clocks in entries; nil means time.Now.
	Now func() time.Time
}

// DB is an open PostgreSQL store: a connection pool over a migrated schema.
type DB struct {
	pool   *pgxpool.Pool
	log    *zap.Logger
	now    func() time.Time
	target string // host/socket, port, database and user: never the password
	// afterArchive, set only by tests, runs inside a transaction that has
	// archived a session and not yet written its successor.
	afterArchive func(ctx context.Context, tx pgx.Tx)
	// chains caches parsed transcript chains for Context.
	chains chainCache
	// heads remembers the session each key had when this process last
	// began it: Begin appends a turn's inputs ahead only to that one
	// (begin_inputs.go).
	heads lastSessions
	// counters writes Store.AddCounters in the background; it runs from
	// Open until Close (see startCounters).
	counters     *counterWriter
	stopCounters func()
	// writes commits the short writes of many callers together
	// (writegroup.go); it runs from Open until Close.
	writes     *writeGroup
	stopWrites func()
	// flushPool and lazyPool are the group commit's connections
	// (writegroup_pools.go).
	flushPool, lazyPool *pgxpool.Pool
	// trips counts round trips and commits by operation (roundtrips.go);
	// it traces every connection made from the pool's config.
	trips *tripTracer
}

// Open connects, checks that the server answers, and applies the embedded
// migrations that are not applied yet (under an advisory lock, so replicas
// starting together migrate once). The error names the server (host or
// socket directory, port, database, user), never the password.
func Open(ctx context.Context, o Options) (*DB, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		// pgconn's parse errors redact the password already; say no more
		// than that the URL is malformed.
		return nil, fmt.Errorf("pgstore: open: parse url: %w", err)
	}
	cfg.MaxConns = o.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set {
		st := o.StatementTimeout
		if st == 0 {
			st = DefaultStatementTimeout
		}
		if st > 0 {
			cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(st.Milliseconds(), 1), 10)
		}
	}
	target := describe(cfg.ConnConfig.Config)
	trips := &tripTracer{}
	cfg.ConnConfig.Tracer = trips
	cfg.AfterConnect = useTimeCodec // the write pools' copies too
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open %s: %w", target, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open: cannot reach PostgreSQL at %s: %w", target, redact(err, cfg.ConnConfig.Password))
	}
	db := &DB{pool: pool, log: log.With(zap.String("postgres", target)), now: o.Now, target: target, trips: trips}
	if db.now == nil {
		db.now = time.Now
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", target, err)
	}
	if err := db.openWritePools(ctx, cfg); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", target, err)
	}
	db.startWrites()
	db.startCounters()
	return db, nil
}

// Close writes the counters queued, stops the group commit (finishing
// the writes handed to it), waits for the connections in use to be
// returned and closes the pool.
func (db *DB) Close() {
	db.stopCounters()
	db.stopWrites()
	db.closeWritePools()
	db.pool.Close()
}

// Target describes the server for diagnostics (gateway doctor): host or
// socket directory, port, database and user, without the password.
func (db *DB) Target() string { return db.target }

// Ping checks connectivity.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pgstore: ping %s: %w", db.target, err)
	}
	return nil
}

// describe renders the connection target: "socket /var/run/postgresql port
// 5432 database gateway user root" or "host db.example:5432 ...".
func describe(c pgconn.Config) string {
	where := "host " + net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
	if strings.HasPrefix(c.Host, "/") {
		where = "socket " + c.Host + " port " + strconv.Itoa(int(c.Port))
	}
	return where + " database " + strconv.Quote(c.Database) + " user " + strconv.Quote(c.User)
}

// redact removes the password from an error's text should a driver ever
// echo it. The chain is kept for errors.Is/As.
func redact(err error, password string) error {
	if password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &redacted{msg: strings.ReplaceAll(err.Error(), password, "xxxxx"), err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// clock is the store's time, cut to PostgreSQL's microsecond resolution so
// what a method returns equals what a later read returns.
func (db *DB) clock() time.Time { return db.now().UTC().Truncate(time.Microsecond) }

// The schema lives in versioned SQL files run by goose (pressly/goose),
// and one Go migration (00027, migrate_search_words.go):
// its Provider takes an fs.FS and a context, needs no global state, and
// its Postgres session locker takes pg_advisory_lock around the run, so
// replicas starting at once apply each migration exactly once.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is goose's bookkeeping table.
const versionTable = "gateway_schema_version"

// lockID is the advisory lock key of migrations ("gateway" in ASCII).
const lockID = 0x67617465776179

func (db *DB) provider() (*goose.Provider, func() error, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, nil, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, nil, err
	}
	sqldb := stdlib.OpenDBFromPool(db.pool)
	p, err := goose.NewProvider(goose.DialectPostgres, sqldb, sub,
		goose.WithTableName(versionTable), goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(searchWordsMigration()))
	if err != nil {
		sqldb.Close()
		return nil, nil, err
	}
	return p, sqldb.Close, nil
}

// migrate applies the migrations not applied yet.
func (db *DB) migrate(ctx context.Context) error {
	p, done, err := db.provider()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer done()
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range res {
		db.log.Info("schema migration applied", zap.Int64("version", r.Source.Version),
			zap.String("file", r.Source.Path), zap.Duration("took", r.Duration))
	}
	return nil
}

// SchemaVersion is the version of the latest migration applied.
func (db *DB) SchemaVersion(ctx context.Context) (int64, error) {
	p, done, err := db.provider()
	if err != nil {
		return 0, fmt.Errorf("pgstore: schema version: %w", err)
	}
	defer done()
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("pgstore: schema version: %w", err)
	}
	return v, nil
}
