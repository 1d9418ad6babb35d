package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// DefaultMaxConns is the pool size when Options.MaxConns is 0.
const DefaultMaxConns = 10

// DefaultConnectTimeout bounds Open's first connection when the context
// has no earlier deadline: an unreachable server fails fast and clearly.
const DefaultConnectTimeout = 10 * time.Second

// Options configure Open.
type Options struct {
	// URL is a libpq connection URL or key=value string, e.g.
	// postgres:///gateway?host=/var/run/postgresql. It may hold a
	// password; no error or log line repeats it.
	URL string
	// MaxConns caps the pool (DefaultMaxConns when 0).
	MaxConns int32
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
	target := describe(cfg.ConnConfig.Config)
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
	db := &DB{pool: pool, log: log.With(zap.String("postgres", target)), now: o.Now, target: target}
	if db.now == nil {
		db.now = time.Now
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", target, err)
	}
	return db, nil
}

// Close waits for the connections in use to be returned and closes the pool.
func (db *DB) Close() { db.pool.Close() }

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

// now is the store's clock, cut to PostgreSQL's microsecond resolution so
// what a method returns equals what a later read returns.
func (db *DB) clock() time.Time { return db.now().UTC().Truncate(time.Microsecond) }

// isUniqueViolation reports a unique or primary key conflict.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
