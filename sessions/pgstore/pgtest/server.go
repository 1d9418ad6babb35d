package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	oexec "os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Server is a PostgreSQL server of one test's own (StartServer): a fresh
// cluster in a temporary directory, listening only on a Unix socket there,
// that the test may stop and start as an operator restarts a server —
// which the shared server of GATEWAY_TEST_POSTGRES_URL must never be, as
// other packages' tests use it at the same time.
type Server struct {
	t     testing.TB
	bin   string // the directory of initdb and pg_ctl
	dir   string // socket directory; the cluster is in dir/data
	port  int
	runAs string // "postgres" when the tests run as root (initdb refuses root)
}

// StartServer creates and starts a cluster for t with the server binaries
// of the PostgreSQL that scripts/postgres installs (pg_config --bindir, or
// /usr/lib/postgresql/15/bin). It is stopped and removed at cleanup. A
// machine without them fails the test saying how to get them.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin := serverBin()
	if bin == "" {
		t.Fatal("pgtest: no PostgreSQL server binaries (initdb, pg_ctl): run the tests through ./scripts/test, which installs postgresql-15")
	}
	dir, err := os.MkdirTemp("", "gwpg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: dir, port: 20000 + randInt(20000)}
	if os.Geteuid() == 0 {
		s.runAs = "postgres"
		if _, err := user.Lookup(s.runAs); err != nil {
			t.Fatalf("pgtest: running as root needs the postgres user to run the server: %v", err)
		}
		if out, err := oexec.Command("chown", s.runAs, dir).CombinedOutput(); err != nil {
			t.Fatalf("pgtest: chown %s: %v: %s", dir, err, out)
		}
	}
	t.Cleanup(func() {
		_ = s.ctl("stop", "-m", "immediate")
		_ = os.RemoveAll(dir)
	})
	if out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	s.Start()
	return s
}

// URL is the server's connection URL for database name ("postgres" is
// there from the start).
func (s *Server) URL(name string) string {
	return fmt.Sprintf("postgres:///%s?host=%s&port=%d&user=postgres", name, s.dir, s.port)
}

// Start starts the server and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-k %s -p %d -c listen_addresses='' -c max_connections=200", s.dir, s.port)
	if err := s.ctl("start", "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log"), "-o", opts); err != nil {
		s.t.Fatalf("pgtest: start the server: %v\n%s", err, s.Log())
	}
}

// Stop stops the server as `pg_ctl stop -m fast` does: every session is
// ended at once (their transactions roll back), then it shuts down.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.ctl("stop", "-w", "-t", "60", "-m", "fast"); err != nil {
		s.t.Fatalf("pgtest: stop the server: %v\n%s", err, s.Log())
	}
}

// Log is the server's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) ctl(args ...string) error {
	out, err := s.run("pg_ctl", append([]string{"-D", s.data()}, args...)...)
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %w: %s", args[0], err, bytes.TrimSpace(out))
	}
	return nil
}

// run runs a server binary (bounded to 2 minutes), as the postgres user
// when the tests run as root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(s.bin, name)
	cmd := oexec.CommandContext(ctx, path, args...)
	if s.runAs != "" {
		cmd = oexec.CommandContext(ctx, "runuser", append([]string{"-u", s.runAs, "--", path}, args...)...)
	}
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	return cmd.CombinedOutput()
}

// serverBin finds the directory of initdb and pg_ctl.
func serverBin() string {
	var dirs []string
	if out, err := oexec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	dirs = append(dirs, "/usr/lib/postgresql/15/bin")
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

func randInt(n int) int {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int(binary.LittleEndian.Uint64(b[:]) % uint64(n))
}
