// Package pgtest gives each test its own fresh PostgreSQL database on the
// server named by GATEWAY_TEST_POSTGRES_URL (scripts/postgres starts one
// and scripts/test exports the variable). Without the variable a test
// fails, saying how to get a server: it never passes or skips silently.
//
// Concurrency: NewDatabase may be called from parallel tests; each call
// creates a database with a random name and drops it at cleanup.
//
// A test that must stop and start a server (a real restart, not the
// connection cut the outage tests make on the shared server) runs one of
// its own with StartServer: a fresh cluster on a Unix socket in a
// temporary directory, run as the postgres user when the tests run as root.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding the server's admin URL; its role must
// be allowed to CREATE DATABASE.
const EnvURL = "GATEWAY_TEST_POSTGRES_URL"

const howTo = EnvURL + " is not set: run the tests through ./scripts/test (it starts PostgreSQL), " +
	"or export " + EnvURL + "=$(./scripts/postgres)"

// AdminURL returns the server URL, or fails the test saying how to get one.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Fatal(howTo)
	}
	return u
}

// NewDatabase creates an empty database for this test and returns its URL
// (the admin URL with the database replaced). It is dropped at cleanup,
// connections still open or not.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "gwtest_" + hex.EncodeToString(b[:])
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL (got a value that is not: %v)", EnvURL, err)
	}
	u.Path = "/" + name

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Production servers sort text by a locale (en_US and the like), not by
	// bytes: so do the test databases, where the server can (ICU), so that
	// code relying on a C-locale server's order fails here first.
	ident := pgx.Identifier{name}.Sanitize()
	if err := exec(ctx, admin, "CREATE DATABASE "+ident+" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"); err != nil {
		t.Logf("pgtest: database %s without an ICU collation (%v)", name, err)
		if err := exec(ctx, admin, "CREATE DATABASE "+ident); err != nil {
			t.Fatalf("pgtest: create database %s: %v", name, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, admin, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return u.String()
}

// WithParam returns u with one query parameter set (e.g. a
// statement_timeout for a fault test).
func WithParam(t testing.TB, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(ctx context.Context, connURL, sql string) error {
	c, err := pgx.Connect(ctx, connURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", strings.Fields(sql)[0], err)
	}
	return nil
}
