package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
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
// password never shown), says its stored-state checks did not run, and
// runs none of the files backend's: a damaged journal file in the state
// dir is not its data.
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
	if s.Kind != "postgres" || s.Reachable || s.StoredChecks || s.Err == "" || !strings.Contains(s.Note, "did not run") {
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
		!strings.Contains(lines[1], "stored-state checks (entries, transcripts, delivery, schema) did not run") {
		t.Errorf("text report:\n%s", r.Stdout)
	}
}

// TestDoctorPostgresStoredChecks: on postgres, doctor names the backend,
// its schema version and that it answers, runs the backend's own checks
// and prints what they find like the files ones (exit 1); --fix refuses,
// changing nothing and naming the holder, while a daemon holds the
// database, and repairs once it is gone (exit 0, then a clean report).
func TestDoctorPostgresStoredChecks(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	version, err := db.SchemaVersion(ctx)
	if err != nil || version < 10 {
		t.Fatalf("schema version %d, %v", version, err)
	}
	st := db.Store("main", nil)
	k, err := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	must(t, err)
	e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram"})
	must(t, err)
	tr, err := st.TranscriptOf(e)
	must(t, err)
	_, err = tr.Append(ctx, sessions.UserText("hello", time.Now()))
	must(t, err)
	// The entry says 9 messages; the transcript has one.
	_, err = st.Patch(ctx, k, func(e *sessions.Entry) error { e.MessageCount = 9; return nil })
	must(t, err)
	// An hour ago: doctor spares the counters of a transcript written
	// within its settle time (a turn in flight beside a running daemon).
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	_, err = conn.Exec(ctx, `UPDATE transcript_entries SET created_at = created_at - interval '1 hour'`)
	must(t, err)
	must(t, conn.Close(ctx))

	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	cfg := writeConfig(t, state, "", "storage: {backend: postgres, postgres: {url: \""+url+"\"}}\n")
	r := gw(t, cfg, "doctor").want(t, 1)
	first, _, _ := strings.Cut(r.Stdout, "\n")
	if !strings.HasPrefix(first, "storage: postgres at ") || !strings.Contains(first, fmt.Sprintf(", schema version %d: ok (answered in ", version)) {
		t.Errorf("first line %q, want postgres, schema version %d, answering", first, version)
	}
	for _, want := range []string{
		"PROBLEM counter-lag        entries " + k.String() + ": messageCount 9, compactionCount 0; its transcript " + e.SessionID + " has 1 and 0\n",
		"        --fix would: set them from the transcript rows\n",
		"1 problem(s), 0 fixed, 1 remaining\n",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "did not run") || strings.Contains(r.Stdout, "files backend only") {
		t.Errorf("doctor says the stored checks did not run:\n%s", r.Stdout)
	}

	r = gw(t, cfg, "doctor", "--json").want(t, 1)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if s := rep.Storage; s.Kind != "postgres" || !s.Reachable || !s.StoredChecks || s.SchemaVersion != version || s.Note != "" {
		t.Errorf("storage section %+v, want postgres at schema version %d, reachable, stored checks run", s, version)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != kindCounterLag || rep.Problems[0].Fixed {
		t.Errorf("problems %s, want one counter-lag", r.Stdout)
	}

	// A daemon holds the database: --fix changes nothing and says who.
	release, err := db.HoldDaemon(ctx, false)
	must(t, err)
	r = gw(t, cfg, "doctor", "--fix").want(t, 1)
	t.Logf("doctor --fix beside a daemon:\n%s", r.Stdout)
	for _, want := range []string{"PROBLEM counter-lag", "--fix refused, nothing in the storage was changed",
		"the database is in use by a running gateway (backend pid ", "stop the daemon(s) using it"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("doctor --fix beside a daemon lacks %q:\n%s", want, r.Stdout)
		}
	}
	if e, _, err := st.Get(k); err != nil || e.MessageCount != 9 {
		t.Errorf("messageCount %d, %v after the refused --fix, want 9", e.MessageCount, err)
	}
	release()

	r = gw(t, cfg, "doctor", "--fix").want(t, 0)
	if !strings.Contains(r.Stdout, "FIXED   counter-lag") || !strings.Contains(r.Stdout, "1 problem(s), 1 fixed, 0 remaining\n") {
		t.Errorf("doctor --fix:\n%s", r.Stdout)
	}
	if e, _, err := st.Get(k); err != nil || e.MessageCount != 1 {
		t.Errorf("messageCount %d, %v after --fix, want 1", e.MessageCount, err)
	}
	r = gw(t, cfg, "doctor").want(t, 0)
	if !strings.Contains(r.Stdout, "no problems found") {
		t.Errorf("doctor after --fix:\n%s", r.Stdout)
	}
}
