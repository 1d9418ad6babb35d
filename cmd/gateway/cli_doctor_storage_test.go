package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDoctorReportsFilesStorage: doctor's report starts with the storage
// backend (kind, location, whether it answers) in text and JSON, and with
// the files backend the stored-state checks run and find what is wrong.
func TestDoctorReportsFilesStorage(t *testing.T) {
	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	seed(t, state, time.Now().Add(-time.Hour), []string{"one"})
	cfg := writeConfig(t, state, "", "storage: {backend: files}\n")

	r := gw(t, cfg, "doctor").want(t, 0)
	first, _, _ := strings.Cut(r.Stdout, "\n")
	if !strings.HasPrefix(first, "storage: files at "+state+": ok (answered in ") {
		t.Errorf("first line %q, want the files backend at %s answering", first, state)
	}
	if strings.Contains(r.Stdout, "files backend only") {
		t.Errorf("files report says checks were skipped:\n%s", r.Stdout)
	}

	r = gw(t, cfg, "doctor", "--json").want(t, 0)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	s := rep.Storage
	if s.Kind != "files" || s.Location != state || !s.Reachable || !s.StoredChecks || s.Err != "" || s.SchemaVersion != 0 || s.Note != "" {
		t.Errorf("storage section %+v, want files at %s, reachable, stored checks run", s, state)
	}
	if !strings.Contains(r.Stdout, `"storage": {`) || !strings.Contains(r.Stdout, `"kind": "files"`) {
		t.Errorf("JSON lacks the storage section:\n%s", r.Stdout)
	}

	// The stored-state checks still run on files: a damaged journal line.
	must(t, os.MkdirAll(filepath.Join(state, "ingress"), 0o700))
	must(t, os.WriteFile(filepath.Join(state, "ingress", "journal.jsonl"), []byte("{garbage\n"), 0o600))
	r = gw(t, cfg, "doctor", "--json").want(t, 1)
	rep = doctorReport{}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != kindJournalDamage || !rep.Storage.Reachable {
		t.Errorf("report %s, want one journal-damaged problem and the storage reachable", r.Stdout)
	}
}

// TestDoctorPostgresUnreachable: with storage.backend postgres on a server
// that does not answer, doctor says so (exit 1, storage-unreachable, the
// password never shown) and runs none of the files backend's checks: a
// damaged journal file in the state dir is not its data.
func TestDoctorPostgresUnreachable(t *testing.T) {
	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	must(t, os.MkdirAll(filepath.Join(state, "ingress"), 0o700))
	must(t, os.WriteFile(filepath.Join(state, "ingress", "journal.jsonl"), []byte("{garbage\n"), 0o600))
	cfg := writeConfig(t, state, "",
		`storage: {backend: postgres, postgres: {url: "postgres://gw:s3cret@127.0.0.1:1/gw?connect_timeout=2"}}`+"\n")

	r := gw(t, cfg, "doctor", "--json").want(t, 1)
	if strings.Contains(r.Stdout+r.Stderr, "s3cret") {
		t.Errorf("doctor shows the password:\n%s%s", r.Stdout, r.Stderr)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	s := rep.Storage
	if s.Kind != "postgres" || s.Reachable || s.StoredChecks || s.Err == "" || !strings.Contains(s.Note, "files backend only") {
		t.Errorf("storage section %+v, want postgres, unreachable, stored checks skipped with a note", s)
	}
	if s.Location != "postgres://gw:xxxxx@127.0.0.1:1/gw?connect_timeout=2" {
		t.Errorf("location %q, want the configured URL without its password", s.Location)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != kindStorage {
		t.Errorf("problems %s, want only storage-unreachable", r.Stdout)
	}

	r = gw(t, cfg, "doctor").want(t, 1)
	lines := strings.Split(r.Stdout, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "storage: postgres at ") || !strings.Contains(lines[0], "not reachable") ||
		!strings.Contains(lines[1], "apply to the files backend only") {
		t.Errorf("text report:\n%s", r.Stdout)
	}
}
