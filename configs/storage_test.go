package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStorageDefaults(t *testing.T) {
	c, err := LoadBytes(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Storage{Backend: StorageFiles, Postgres: PostgresStorage{MaxConns: 10, StatementTimeout: 30 * time.Second}}
	if c.Storage != want {
		t.Fatalf("storage defaults = %+v, want %+v", c.Storage, want)
	}
}

func TestStorageLoads(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  []string
		want Storage
	}{
		{"postgres url", `storage: {backend: postgres, postgres: {url: "postgres://gw:pw@db.example:5432/gateway"}}`, nil,
			Storage{Backend: StoragePostgres, Postgres: PostgresStorage{URL: "postgres://gw:pw@db.example:5432/gateway",
				MaxConns: 10, StatementTimeout: 30 * time.Second}}},
		{"postgresql scheme, socket, pool and timeout",
			`storage: {backend: postgres, postgres: {url: "postgresql:///gateway?host=/var/run/postgresql", maxConns: 1000, statementTimeout: 2s, replicaId: gw-1.eu}}`, nil,
			Storage{Backend: StoragePostgres, Postgres: PostgresStorage{URL: "postgresql:///gateway?host=/var/run/postgresql",
				MaxConns: 1000, StatementTimeout: 2 * time.Second, ReplicaID: "gw-1.eu"}}},
		{"files keeps a configured url", `storage: {postgres: {url: "postgres://db/gw", maxConns: 1}}`, nil,
			Storage{Backend: StorageFiles, Postgres: PostgresStorage{URL: "postgres://db/gw", MaxConns: 1, StatementTimeout: 30 * time.Second}}},
		{"env", "", []string{"GATEWAY_STORAGE_BACKEND=postgres", "GATEWAY_STORAGE_POSTGRES_URL=postgres://db/gw",
			"GATEWAY_STORAGE_POSTGRES_MAX_CONNS=3", "GATEWAY_STORAGE_POSTGRES_STATEMENT_TIMEOUT=1m"},
			Storage{Backend: StoragePostgres, Postgres: PostgresStorage{URL: "postgres://db/gw", MaxConns: 3, StatementTimeout: time.Minute}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadBytes([]byte(tt.yaml), tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Storage != tt.want {
				t.Errorf("storage = %+v, want %+v", c.Storage, tt.want)
			}
		})
	}
}

func TestStorageRejected(t *testing.T) {
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "pg-url")
	if err := os.WriteFile(urlFile, []byte("postgres://gw:pw@db/gateway\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad-url")
	if err := os.WriteFile(badFile, []byte("mysql://gw:s3cret@db/gateway\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown backend", `storage: {backend: mysql}`, `storage.backend: "mysql" is not files, sqlite or postgres`},
		{"postgres without url", `storage: {backend: postgres}`, "storage.postgres: url or urlFile is required with backend postgres"},
		{"url and urlFile", `storage: {backend: postgres, postgres: {url: "postgres://db/gw", urlFile: "` + urlFile + `"}}`,
			"storage.postgres: url and urlFile are exclusive"},
		{"missing urlFile", `storage: {backend: postgres, postgres: {urlFile: "` + filepath.Join(dir, "none") + `"}}`,
			"storage.postgres.urlFile: open " + filepath.Join(dir, "none")},
		{"bad scheme", `storage: {backend: postgres, postgres: {url: "mysql://gw:s3cret@db/gateway"}}`,
			`storage.postgres.url: scheme "mysql" is not postgres or postgresql`},
		{"bad scheme in urlFile", `storage: {backend: postgres, postgres: {urlFile: "` + badFile + `"}}`,
			`storage.postgres.urlFile (` + badFile + `): scheme "mysql" is not postgres or postgresql`},
		{"key=value string", `storage: {backend: postgres, postgres: {url: "host=db password=s3cret"}}`,
			"storage.postgres.url: not a URL"},
		{"unparsable", `storage: {backend: postgres, postgres: {url: "postgres://gw:s3cret@db:port/x"}}`,
			"storage.postgres.url: not a valid URL"},
		{"blank around", `storage: {backend: postgres, postgres: {url: " postgres://db/gw"}}`,
			"storage.postgres.url: must not start or end with white space"},
		{"bad url even with files", `storage: {postgres: {url: "http://db/gw"}}`, `storage.postgres.url: scheme "http"`},
		{"maxConns zero", `storage: {postgres: {maxConns: 0}}`, "storage.postgres.maxConns: 0 is not between 1 and 1000"},
		{"maxConns too many", `storage: {postgres: {maxConns: 1001}}`, "storage.postgres.maxConns: 1001 is not between 1 and 1000"},
		{"statementTimeout zero", `storage: {postgres: {statementTimeout: 0s}}`, "storage.postgres.statementTimeout: 0s must be positive"},
		{"replicaId with a slash", `storage: {postgres: {replicaId: "a/b"}}`, `storage.postgres.replicaId: "a/b" is not`},
		{"statementTimeout not a duration", `storage: {postgres: {statementTimeout: soon}}`, "statementTimeout"},
		{"unknown key", `storage: {postgres: {password: x}}`, `storage.postgres.password: unknown key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tt.yaml), nil)
			if err == nil {
				t.Fatalf("loaded; want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}

func TestStorageURLFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "pg-url")
	if err := os.WriteFile(f, []byte("postgres://gw:pw@db/gateway\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadBytes([]byte(`storage: {backend: postgres, postgres: {urlFile: "`+f+`"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Storage.Postgres.URL, "postgres://gw:pw@db/gateway"; got != want {
		t.Errorf("url from urlFile = %q, want %q", got, want)
	}
}
