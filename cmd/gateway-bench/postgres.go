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
