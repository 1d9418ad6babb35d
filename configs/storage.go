package configs

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gateway/gateway/internal/secret"
)

// The storage backends (SPEC §3.8): where durable state lives.
const (
	// StorageFiles keeps everything under stateDir (the default).
	StorageFiles = "files"
	// StoragePostgres keeps sessions, transcripts and the journal in a
	// PostgreSQL database.
	StoragePostgres = "postgres"
	// StorageSQLite keeps the same state in one SQLite database file,
	// stateDir/gateway.sqlite.
	StorageSQLite = "sqlite"
)

// Storage defaults and bounds.
const (
	DefaultPostgresMaxConns         = 10
	MaxPostgresMaxConns             = 1000
	DefaultPostgresStatementTimeout = 30 * time.Second
)

// Storage is the storage section. It is read once at start: changing it
// needs a restart (hot reload says so and keeps the open backend).
type Storage struct {
	// Backend is files (default), sqlite or postgres.
	Backend  string          `mapstructure:"backend"`
	Postgres PostgresStorage `mapstructure:"postgres"`
}

// PostgresStorage is storage.postgres: the database of the postgres
// backend.
type PostgresStorage struct {
	// URL is a postgres:// or postgresql:// connection URL; it may hold a
	// password. URLFile names a file holding it instead (a secret file);
	// they are exclusive.
	URL     string `mapstructure:"url"`
	URLFile string `mapstructure:"urlFile"`
	// MaxConns caps the connection pool (1..1000, default 10).
	MaxConns int `mapstructure:"maxConns"`
	// StatementTimeout is the server-side limit of every statement
	// (default 30s): a statement stuck behind a lock fails and rolls back
	// instead of wedging a session.
	StatementTimeout time.Duration `mapstructure:"statementTimeout"`
	// ReplicaID names this daemon among the replicas sharing the database
	// (gateway doctor, leases); empty is a new UUID at every start.
	ReplicaID string `mapstructure:"replicaId"`
	// Replicas lets several daemons share the database (every one of them
	// must set it). False (the default): a daemon runs alone on its
	// database and a second one refuses to start, naming the first.
	// True on every replica (issue 13): each accepts ingress, a session's
	// turns run on one replica at a time under its lease (fenced writes),
	// Telegram polling and Discord connections run on one replica with
	// failover, and running replicas take over a dead or stopped one's
	// unfinished messages.
	Replicas bool `mapstructure:"replicas"`
}

// replicaIDPattern is what storage.postgres.replicaId accepts.
var replicaIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// defaultStorage is the storage section when the file has none.
func defaultStorage() Storage {
	return Storage{Backend: StorageFiles, Postgres: PostgresStorage{
		MaxConns: DefaultPostgresMaxConns, StatementTimeout: DefaultPostgresStatementTimeout,
	}}
}

// readSecret fills URL from URLFile. Both set is an error: which one wins
// would be a guess.
func (p *PostgresStorage) readSecret() error {
	if p.URLFile == "" {
		return nil
	}
	if p.URL != "" {
		return errors.New("storage.postgres: url and urlFile are exclusive; set one of them")
	}
	u, err := secret.ReadFile(p.URLFile)
	if err != nil {
		return fmt.Errorf("storage.postgres.urlFile: %w", err)
	}
	p.URL = u
	return nil
}

// Validate checks the storage section; errors name the key and never
// repeat the URL (it may hold a password).
func (s Storage) Validate() error {
	switch s.Backend {
	case StorageFiles, StorageSQLite, StoragePostgres:
	default:
		return fmt.Errorf("storage.backend: %q is not %s, %s or %s", s.Backend, StorageFiles, StorageSQLite, StoragePostgres)
	}
	p := s.Postgres
	if s.Backend == StoragePostgres && p.URL == "" {
		return errors.New("storage.postgres: url or urlFile is required with backend postgres")
	}
	if p.URL != "" {
		if err := checkPostgresURL(p.URL); err != nil {
			key := "storage.postgres.url"
			if p.URLFile != "" {
				key = "storage.postgres.urlFile (" + p.URLFile + ")"
			}
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	if p.MaxConns < 1 || p.MaxConns > MaxPostgresMaxConns {
		return fmt.Errorf("storage.postgres.maxConns: %d is not between 1 and %d", p.MaxConns, MaxPostgresMaxConns)
	}
	if p.StatementTimeout <= 0 {
		return fmt.Errorf("storage.postgres.statementTimeout: %s must be positive", p.StatementTimeout)
	}
	if p.ReplicaID != "" && !replicaIDPattern.MatchString(p.ReplicaID) {
		return fmt.Errorf("storage.postgres.replicaId: %q is not 1 to 64 letters, digits, '.', '_' or '-' starting with a letter or digit", p.ReplicaID)
	}
	return nil
}

// checkPostgresURL accepts a postgres:// or postgresql:// URL. The error
// describes the problem without the URL itself.
func checkPostgresURL(s string) error {
	if strings.TrimSpace(s) != s {
		return errors.New("must not start or end with white space")
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse's error quotes the input, password included.
		return errors.New("not a valid URL (want postgres://user@host:port/database)")
	}
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql":
	case "":
		return errors.New("not a URL (want postgres://user@host:port/database; key=value strings are not accepted)")
	default:
		return fmt.Errorf("scheme %q is not postgres or postgresql", u.Scheme)
	}
	if u.Opaque != "" {
		return errors.New("not a valid URL (want postgres://user@host:port/database)")
	}
	return nil
}
