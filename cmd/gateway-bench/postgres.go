package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// benchDatabase creates a fresh database on the server adminURL points at
// (a role that may CREATE DATABASE) and returns its URL and a function
// that drops it: each run starts from an empty schema, which the daemon
// migrates at start.
func benchDatabase(ctx context.Context, adminURL string, keep bool) (string, func(), error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("--postgres: want a postgres:// URL of a role that may create databases (got %q)", adminURL)
	}
	name := fmt.Sprintf("gateway_bench_%d_%d", os.Getpid(), time.Now().Unix())
	if err := adminExec(ctx, adminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("--postgres: create database %s: %w", name, err)
	}
	dbURL := *u
	dbURL.Path = "/" + name
	drop := func() {
		if keep {
			fmt.Fprintf(os.Stderr, "gateway-bench: kept database %s\n", name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, adminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "gateway-bench: drop database %s: %v\n", name, err)
		}
	}
	return dbURL.String(), drop, nil
}

func adminExec(ctx context.Context, connURL, sql string) error {
	conn, err := pgx.Connect(ctx, connURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// benchDB is the run's database: url for the bench's own statistics,
// daemonURL for the daemons (through the round-trip counting proxy with
// -roundtrips). All empty on the files backend.
type benchDB struct {
	url, daemonURL string
	proxy          *dbProxy
	drop           func()
}

// openBenchDB makes the run's fresh database (with -postgres) and, with
// -roundtrips, the proxy in front of it. Close drops both.
func openBenchDB(ctx context.Context, o options) (*benchDB, error) {
	db := &benchDB{drop: func() {}}
	if o.postgres == "" {
		return db, nil
	}
	var err error
	if db.url, db.drop, err = benchDatabase(ctx, o.postgres, o.keep); err != nil {
		return nil, err
	}
	db.daemonURL = db.url
	if o.roundTrips {
		if db.proxy, db.daemonURL, err = startDBProxy(db.url); err != nil {
			db.drop()
			return nil, err
		}
	}
	return db, nil
}

// RoundTrips is the proxy's count so far (0 without one).
func (db *benchDB) RoundTrips() int64 {
	if db.proxy == nil {
		return 0
	}
	return db.proxy.RoundTrips()
}

// Close stops the proxy and drops the database; the daemons must have
// stopped.
func (db *benchDB) Close() {
	if db.proxy != nil {
		db.proxy.Close()
	}
	db.drop()
}
