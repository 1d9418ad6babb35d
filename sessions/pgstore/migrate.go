package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"go.uber.org/zap"
)

// The schema lives in versioned SQL files run by goose (pressly/goose):
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
		goose.WithTableName(versionTable), goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
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
