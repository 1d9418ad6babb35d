package sqlitestore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file that is not a database, or a database cut short, is refused at
// open with an error naming the file, and left as it was: Open never
// makes a new database over what it cannot read.
func TestOpenRefusesDamagedFileUntouched(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.sqlite")
	db, err := Open(ctx, Options{Path: good})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"text.sqlite":      []byte(strings.Repeat("not a database, some text. ", 40)),
		"truncated.sqlite": whole[:4096], // the header page only: the schema's pages are gone
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, content, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := Open(ctx, Options{Path: p})
			if err == nil {
				_ = db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name %s", err, p)
			}
			after, rerr := os.ReadFile(p)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !bytes.Equal(after, content) {
				t.Errorf("the file changed: %d bytes, was %d", len(after), len(content))
			}
		})
	}
}

// Opening again applies nothing twice: the schema version and the
// migrations recorded are the same after a second and a third open.
func TestOpenMigrationsIdempotent(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), FileName)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		db, err := Open(ctx, Options{Path: p})
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		var n int
		if err := db.read.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if v := db.SchemaVersion(); v != latestVersion() || n != len(ms) {
			t.Errorf("open %d: version %d with %d migrations recorded, want %d with %d", i+1, v, n, latestVersion(), len(ms))
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A database a newer release migrated is refused, naming both versions;
// a read-only open of a missing file creates nothing.
func TestOpenRefusesNewerSchemaAndMissingReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	db, err := Open(ctx, Options{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	newer := latestVersion() + 1
	if err := db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)`, newer)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err := Open(ctx, Options{Path: p}); err == nil {
		_ = db.Close()
		t.Error("a database of a newer schema opened")
	} else if !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), p) {
		t.Errorf("error %q does not say the schema is newer, naming the file", err)
	}
	missing := filepath.Join(dir, "missing.sqlite")
	if db, err := Open(ctx, Options{Path: missing, ReadOnly: true}); err == nil {
		_ = db.Close()
		t.Error("a read-only open of a missing file succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only open made %s: %v", missing, err)
	}
}

// A new database and its WAL and shared-memory files are 0600 whatever the
// umask (they hold every message; SPEC §3.1: files 0600), so `gateway
// doctor` finds nothing to fix on a store the daemon made.
func TestOpenNewDatabaseIsPrivate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gateway.sqlite")
	db, err := Open(context.Background(), Options{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.write.Exec(`CREATE TABLE IF NOT EXISTS private_probe (x)`); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p, p + "-wal", p + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s: mode %#o, want 0600", f, m)
		}
	}
}
