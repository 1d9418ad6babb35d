package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	_ "modernc.org/sqlite" // the pure-Go driver "sqlite" (doc.go says why)

	"github.com/gateway/gateway/sessions"
)

// FileName is the database file in a state directory.
const FileName = "gateway.sqlite"

// DefaultBusyTimeout is how long a statement waits for another connection's
// write lock (a second handle, the CLI beside the daemon) before it fails.
const DefaultBusyTimeout = 10 * time.Second

// Options configure Open.
type Options struct {
	// Path is the database file (normally StateDir/gateway.sqlite).
	Path string
	// Logger receives the store's logs; nil discards them.
	Logger *zap.Logger
	// Now is the clock of every timestamp the store writes; nil is
	// time.Now. Stored times are UTC.
	Now func() time.Time
	// BusyTimeout overrides DefaultBusyTimeout.
	BusyTimeout time.Duration
	// ReadOnly opens an existing database without creating or migrating
	// it (gateway doctor on a state dir it must not change).
	ReadOnly bool
}

// DB is an open database: a pool of reading connections and one writing
// connection owned by the writer goroutine (writer.go). It is safe for
// concurrent use; Close stops the writer and closes both.
type DB struct {
	path  string
	log   *zap.Logger
	now   func() time.Time
	read  *reader
	write *sql.DB
	w     *writer

	schema int64
}

// Open opens (creating it and its directory when missing) the database at
// o.Path, applies the embedded migrations and starts the writer.
func Open(ctx context.Context, o Options) (*DB, error) {
	if o.Path == "" {
		return nil, errors.New("sqlitestore: open: no database path")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadOnly {
		if _, err := os.Stat(o.Path); err != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", o.Path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", o.Path, err)
	} else if err := createPrivate(o.Path); err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", o.Path, err)
	}
	db := &DB{path: o.Path, log: o.Logger.With(zap.String("backend", "sqlite")), now: o.Now}
	var err error
	if db.write, err = sql.Open("sqlite", dsn(o.Path, o.BusyTimeout, false)); err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", o.Path, err)
	}
	// One connection: the writer goroutine's. database/sql keeps it open.
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	db.write.SetConnMaxLifetime(0)
	rdb, err := sql.Open("sqlite", dsn(o.Path, o.BusyTimeout, true))
	if err != nil {
		_ = db.write.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", o.Path, err)
	}
	db.read = newReader(rdb)
	db.read.SetMaxOpenConns(8)
	db.read.SetMaxIdleConns(8)
	if err := db.start(ctx, o.ReadOnly); err != nil {
		_ = db.read.Close()
		_ = db.write.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", o.Path, err)
	}
	return db, nil
}

// createPrivate makes a missing database file empty with mode 0600 (SPEC
// §3.1), so SQLite, which would create it 0644 under the usual umask,
// finds it there; its -wal and -shm files take the database's mode. An
// existing file is left as it is (`gateway doctor --fix` tightens it).
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// start checks the file is a database in WAL mode, migrates it and starts
// the writer.
func (db *DB) start(ctx context.Context, readOnly bool) error {
	if !readOnly {
		var mode string
		if err := db.write.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
			return fmt.Errorf("journal mode: %w", err)
		}
		if mode != "wal" {
			return fmt.Errorf("journal mode is %q, not wal", mode)
		}
		if err := migrate(ctx, db.write); err != nil {
			return err
		}
	}
	v, err := schemaVersion(ctx, db.read.DB)
	if err != nil {
		return err
	}
	if v > latestVersion() {
		return fmt.Errorf("schema version %d is newer than this release's %d: run the release that wrote it", v, latestVersion())
	}
	db.schema = v
	db.w = newWriter(db.write, db.path, db.log)
	return nil
}

// walSizeLimit is the size the WAL file is cut back to once a checkpoint
// emptied it (PRAGMA journal_size_limit): without it the file keeps the
// size of the largest burst it ever held (SQLite reuses it, never
// shrinks it), gigabytes after an import or a storage migrate.
var walSizeLimit int64 = 64 << 20

// dsn is the driver's connection string: the pragmas every connection
// applies when it opens. synchronous=FULL makes every commit durable
// (fsync of the WAL) when it returns; the writer groups commits so that a
// burst shares one fsync (writer.go).
func dsn(path string, busy time.Duration, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Add("_txlock", "immediate")
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Path is the database file.
func (db *DB) Path() string { return db.path }

// SchemaVersion is the migration version applied.
func (db *DB) SchemaVersion() int64 { return db.schema }

// clock is the store's now, in UTC.
func (db *DB) clock() time.Time { return db.now().UTC() }

// Close stops the writer (after the writes queued) and closes the
// connections.
func (db *DB) Close() error {
	if db.w != nil {
		db.w.close()
	}
	return errors.Join(db.read.Close(), db.write.Close())
}

// storageErr marks errors that say the database could not be written or
// read (I/O, a full disk, a lock not taken in time) as sessions.ErrStorage.
func storageErr(err error) error {
	if err == nil || errors.Is(err, sessions.ErrStorage) || errors.Is(err, sessions.ErrNotFound) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if isIOError(err) {
		return fmt.Errorf("%w: %w", sessions.ErrStorage, err)
	}
	return err
}
