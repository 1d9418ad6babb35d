package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

// kindStorage is the doctor's finding when the configured backend cannot
// be opened or does not answer.
const kindStorage = "storage-unreachable"

// storageProbeTimeout bounds opening the backend and its status probe.
const storageProbeTimeout = 20 * time.Second

// unreachableNote says why a report has no stored-state findings.
const unreachableNote = "the stored-state checks (entries, transcripts, delivery, schema) did not run: the backend did not answer; " +
	"only the state directory's permissions and free space were checked"

// storeChecker is a backend that checks and repairs its own stored state
// (postgres: pgstore's Check and Repair). The files backend's checks read
// the state directory instead (filestore.Check and filestore.Repair).
type storeChecker interface {
	Check(ctx context.Context, opts sessions.CheckOptions) ([]sessions.Problem, error)
	// Repair refuses while a daemon uses the backend: each error then
	// wraps pgstore.ErrInUse.
	Repair(ctx context.Context, problems []sessions.Problem, opts sessions.CheckOptions) []error
}

var _ storeChecker = (*pgstore.Backend)(nil)

// storageReport is the storage section of the doctor's report: the
// configured backend as its Status reports it.
type storageReport struct {
	sessions.BackendStatus
	// Reachable says the backend opened and answered.
	Reachable bool `json:"reachable"`
	// StoredChecks says the stored-state checks ran.
	StoredChecks bool   `json:"storedChecks"`
	Note         string `json:"note,omitempty"`
	// FixRefused says why --fix changed nothing in the backend (a daemon
	// uses the database): the checks ran read-only.
	FixRefused string `json:"fixRefused,omitempty"`
	// Replicas and Leases are the daemons sharing a postgres database and
	// the leases held now (cli_doctor_replicas.go).
	Replicas []pgstore.Replica `json:"replicas,omitempty"`
	Leases   []leaseReport     `json:"leases,omitempty"`
	// ReplicaID is the replica id the config sets (storage.postgres.replicaId);
	// empty when each start of the daemon takes a new one.
	ReplicaID string `json:"replicaId,omitempty"`
	// Ingress is the lag of unclaimed ingress on a shared database.
	Ingress *pgstore.IngressLag `json:"ingress,omitempty"`
}

// usesFiles reports whether cfg keeps its state in the files backend.
func usesFiles(cfg *configs.Config) bool {
	return cfg.Storage.Backend == "" || cfg.Storage.Backend == configs.StorageFiles
}

// checkStorage opens the configured backend passively (beside a running
// daemon) and reports its kind, location, schema version and whether it
// answers. When another backend than files answers it returns it open,
// for its stored-state checks (the caller closes it); the files checks
// read the state directory themselves, with no Manager open beside theirs.
func checkStorage(ctx context.Context, cfg *configs.Config) (storageReport, sessions.Backend) {
	ctx, cancel := context.WithTimeout(ctx, storageProbeTimeout)
	defer cancel()
	b, err := openSessions(ctx, cfg)
	if err != nil {
		rep := storageReport{BackendStatus: sessions.BackendStatus{Kind: cfg.Storage.Backend, Err: oneLine(err.Error())}}
		rep.Location = cfg.StateDir
		switch cfg.Storage.Backend {
		case configs.StorageSQLite:
			rep.Location = sqlitestore.PathIn(cfg.StateDir)
		case configs.StoragePostgres:
			rep.Location = configs.RedactURL(cfg.Storage.Postgres.URL)
		}
		return rep, nil
	}
	st := b.Status(ctx)
	st.Err = oneLine(st.Err)
	rep := storageReport{BackendStatus: st, Reachable: st.Err == ""}
	if rep.Reachable {
		rep.addReplicas(ctx, b, cfg.Storage.Postgres.ReplicaID)
	}
	if !rep.Reachable || usesFiles(cfg) {
		_ = b.Close()
		return rep, nil
	}
	return rep, b
}

// oneLine joins the lines of a driver's error (pgconn lists each address
// it tried on its own line) so a report line stays one line.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// problem is the finding of an unreachable backend, nil when it answers.
func (s storageReport) problem() *problem {
	if s.Reachable {
		return nil
	}
	return &problem{Kind: kindStorage, Path: s.Location, Detail: s.Err}
}

// printStorage is the first lines of the doctor's text report.
func printStorage(w io.Writer, s storageReport) {
	where := s.Kind + " at " + s.Location
	if s.SchemaVersion > 0 {
		where += fmt.Sprintf(", schema version %d", s.SchemaVersion)
	}
	if s.Reachable {
		fmt.Fprintf(w, "storage: %s: ok (answered in %s)\n", where, s.Latency.Round(time.Microsecond))
	} else {
		fmt.Fprintf(w, "storage: %s: not reachable: %s\n", where, s.Err)
	}
	printReplicas(w, s)
	if s.Note != "" {
		fmt.Fprintf(w, "storage: %s\n", s.Note)
	}
}
