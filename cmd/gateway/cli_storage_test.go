package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// buildFilesState writes sessionstest.BuildState's state into stateDir.
func buildFilesState(t *testing.T, stateDir string) sessionstest.BuiltState {
	t.Helper()
	mgr, err := filestore.Open(filestore.Options{StateDir: stateDir, FlushInterval: time.Hour, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mgr.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	built := sessionstest.BuildState(t, mgr.Backend().Store)
	// Pairing of two channels and cursors of two scopes.
	ctx0 := context.Background()
	at := time.Date(2026, 11, 20, 9, 0, 0, 123456789, time.UTC)
	for _, ch := range []string{"telegram", "discord"} {
		if err := mgr.Backend().Pairing().UpdatePairing(ctx0, ch, func(d *pairstate.Data) (bool, error) {
			d.Pending = append(d.Pending, pairstate.Request{Channel: ch, AccountID: "default", Code: "QWER5678",
				SenderID: "1001", SenderName: "Zoë '; --", CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
			d.Allowed = append(d.Allowed, pairstate.Approval{Channel: ch, AccountID: "default", SenderID: "42", ApprovedAt: at})
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range [][3]string{{"telegram:default", "offset", "912345678"}, {"telegram:default", "migration:-100", "-1002"},
		{"discord:bot/../x", "session", "abc"}} {
		if err := mgr.Backend().Cursors().SetCursor(ctx0, c[0], c[1], c[2]); err != nil {
			t.Fatal(err)
		}
	}
	// Room history of two rooms, one message with a NUL and a long name.
	for i, room := range []string{"agent:main:telegram:group:-100500", "agent:main:discord:channel:77"} {
		for k := range 3 {
			if _, err := mgr.Backend().History().Append(ctx0, room, sessions.HistoryEntry{MessageID: strconv.Itoa(i*10 + k), SenderID: "9",
				SenderName: strings.Repeat("Zoë", 40), At: at.Add(time.Duration(k) * time.Second), Text: "said \x00 " + strconv.Itoa(k)},
				sessions.HistoryLimits{Count: 50}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Work in flight: two pending records (one retried), a reply with one
	// of two chunks delivered, a draft on screen.
	ctx := context.Background()
	j := mgr.Journal()
	key := built.Current[0].String()
	for _, id := range []string{"telegram:default:1:10", "telegram:default:1:11", "telegram:default:1:12"} {
		if _, err := j.Accept(ctx, sessions.Record{ID: id, AgentID: "main", SessionKey: key,
			Payload: json.RawMessage(`{"text":"hi \u0000"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{
		j.Start("telegram:default:1:10"), j.Fail("telegram:default:1:10"),
		j.Ready(sessions.Reply{ID: "r1", Records: []string{"telegram:default:1:12"}, AgentID: "main", SessionKey: key,
			Target: json.RawMessage(`{"chat":1}`), Chunks: []string{"a", "b"}}),
		j.Sent("r1", 1),
		j.Draft(sessions.Draft{ID: "d1", SessionKey: key, Target: json.RawMessage(`{"chat":1}`), MessageID: "77"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return built
}

// TestStorageMigrate moves a state dir into PostgreSQL and back into a new
// state dir through the binary: the summary counts what was built, the
// verification passes, a second run copies nothing, the round trip gives
// byte-identical transcripts, a changed target is refused naming the key
// unless --overwrite, and a held state dir or database is refused.
func TestStorageMigrate(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	built := buildFilesState(t, stateDir)
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, stateDir, "", "")

	r := gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	keys := len(built.Current) + len(built.Deleted)
	for _, want := range []string{
		"agents              " + strconv.Itoa(len(built.Agents)) + "\n",
		"sessions            " + strconv.Itoa(len(built.Current)) + " (session keys " + strconv.Itoa(keys) + ": " + strconv.Itoa(keys) + " copied, 0 already present)",
		"verified: counts equal", "identical for " + strconv.Itoa(len(built.Current)) + " sessions",
		"journal             2 pending records, 1 unsent replies, 1 drafts copied",
		"pairing, cursors    2 channels, 3 cursors copied",
		"pairing of 2 channels and 3 cursors equal",
		"room history        6 entries copied",
		"6 room history entries equal",
		"journal holds the 2 pending records, 1 unsent replies and 1 drafts",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("files -> postgres: output lacks %q:\n%s", want, r.Stdout)
		}
	}
	t.Logf("files -> postgres:\n%s", r.Stdout)

	r = gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	if !strings.Contains(r.Stdout, ": 0 copied, "+strconv.Itoa(keys)+" already present") {
		t.Fatalf("second run copied something:\n%s", r.Stdout)
	}

	backDir := filepath.Join(t.TempDir(), "back")
	r = gw(t, cfg, "storage", "migrate", "--from", "postgres", "--to", "files", "--postgres-url", url, "--state-dir", backDir).want(t, 0)
	if !strings.Contains(r.Stdout, "verified: counts equal") {
		t.Fatalf("postgres -> files:\n%s", r.Stdout)
	}
	sameTranscripts(t, stateDir, backDir)
	// The round trip shows each session as the original does.
	backCfg := writeConfig(t, backDir, "", "")
	for _, k := range built.Current[:3] {
		a := gw(t, cfg, "sessions", "show", k.String(), "--context", "--json").want(t, 0)
		b := gw(t, backCfg, "sessions", "show", k.String(), "--context", "--json").want(t, 0)
		if normalizeClocks(t, a.Stdout) != normalizeClocks(t, b.Stdout) {
			t.Errorf("%s: show differs after the round trip:\n%s\n---\n%s", k, a.Stdout, b.Stdout)
		}
	}

	// A key changed in the target is a conflict naming it; --overwrite
	// replaces it.
	ctx := context.Background()
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := built.Current[2]
	if _, err := db.Index(k.Agent, nil).Patch(ctx, k, func(e *sessions.Entry) error { e.Label = "edited"; return nil }); err != nil {
		t.Fatal(err)
	}
	r = gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 1)
	if !strings.Contains(r.Stderr, k.String()) || !strings.Contains(r.Stderr, "--overwrite") {
		t.Fatalf("conflict not named:\n%s", r.Stderr)
	}
	r = gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url, "--overwrite").want(t, 0)
	if !strings.Contains(r.Stdout, ": 1 copied, ") {
		t.Fatalf("--overwrite:\n%s", r.Stdout)
	}

	// A daemon on the database: refused, naming it.
	release, err := db.HoldShared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r = gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 1)
	if !strings.Contains(r.Stderr, "in use by a running gateway") {
		t.Fatalf("migration beside a daemon on the database:\n%s", r.Stderr)
	}
	release()
}

// TestStorageMigrateRefusesRunningDaemon: while a daemon holds the state
// dir (its gateway.pid lock) the migration refuses in either direction,
// naming the daemon's pid, and writes nothing.
func TestStorageMigrateRefusesRunningDaemon(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	buildFilesState(t, stateDir)
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, stateDir, "", "")
	release, err := gatewayd.LockStateDir(stateDir) // what a running daemon holds
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, dir := range [][]string{{"files", "postgres"}, {"postgres", "files"}} {
		r := gw(t, cfg, "storage", "migrate", "--from", dir[0], "--to", dir[1], "--postgres-url", url).want(t, 1)
		if !strings.Contains(r.Stderr, "another gateway (pid "+strconv.Itoa(os.Getpid())+")") {
			t.Fatalf("%s -> %s beside a daemon:\n%s", dir[0], dir[1], r.Stderr)
		}
	}
	db, err := pgstore.Open(context.Background(), pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if agents, err := db.Transfer().ExportAgents(context.Background()); err != nil || len(agents) != 0 {
		t.Fatalf("the refused migration wrote %v (%v)", agents, err)
	}
}

func TestStorageMigrateUsage(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", "")
	for _, args := range [][]string{
		{"--from", "files", "--to", "files"},
		{"--from", "sqlite", "--to", "postgres"}, // no URL anywhere
		{"--from", "mysql", "--to", "files"},
		{"--from", "sqlite", "--to", "sqlite"},
		{"--from", "files"},
		{"--from", "files", "--to", "postgres"}, // no URL anywhere
	} {
		r := gw(t, cfg, append([]string{"storage", "migrate"}, args...)...).want(t, 2)
		if !strings.Contains(r.Stderr, "storage migrate") {
			t.Errorf("%v: %s", args, r.Stderr)
		}
	}
}

// sameTranscripts checks every transcript of a is in b byte for byte.
func sameTranscripts(t *testing.T, a, b string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(a, "agents"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".jsonl") || strings.HasSuffix(d.Name(), ".lock") ||
			strings.HasPrefix(d.Name(), "sessions.") || strings.HasPrefix(d.Name(), "archive.") {
			return err
		}
		rel, _ := filepath.Rel(a, path)
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got, err := os.ReadFile(filepath.Join(b, rel)); err != nil || string(got) != string(want) {
			t.Errorf("%s differs after the round trip (%v)", rel, err)
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("transcripts compared: %d (%v)", n, err)
	}
}

// normalizeClocks cuts the session's clocks in show --json output to UTC
// microseconds, the resolution a migration keeps.
func normalizeClocks(t *testing.T, out string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show output: %v", err)
	}
	s, _ := v["session"].(map[string]any)
	for _, f := range []string{"createdAt", "sessionStartedAt", "lastInteractionAt", "updatedAt"} {
		str, _ := s[f].(string)
		at, err := time.Parse(time.RFC3339Nano, str)
		if err != nil {
			t.Fatalf("show output: %s: %v", f, err)
		}
		s[f] = at.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestStorageVerifyFindsDifferences: the verification reports a target
// that differs from the source after the copy (an entry's field, a
// transcript line, a pending record gone) and fails with errProblems.
func TestStorageVerifyFindsDifferences(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	built := buildFilesState(t, stateDir)
	url := pgtest.NewDatabase(t)
	cfgPath := writeConfig(t, stateDir, "", "")
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := migrateFlags{from: "files", to: "postgres", postgresURL: url, workers: 2}
	files, err := openFilesSide(cfg, f, false, newDirLocks())
	if err != nil {
		t.Fatal(err)
	}
	defer files.close()
	pg, err := openPostgresSide(ctx, cfg, f, "storage migrate")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.close()
	var out strings.Builder
	if err := copyState(ctx, &out, files, pg, f); err != nil {
		t.Fatal(err)
	}
	if err := verifyMigration(ctx, &out, files, pg, 2); err != nil {
		t.Fatalf("verify after a clean copy: %v\n%s", err, out.String())
	}

	db, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	changed, edited := built.Current[1], built.Current[4]
	if _, err := db.Index(changed.Agent, nil).Patch(ctx, changed, func(e *sessions.Entry) error { e.DisplayName = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	e, _, err := db.Index(edited.Agent, nil).Get(ctx, edited)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := db.Store(edited.Agent, nil).Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, sessions.UserText("one more", time.Now())); err != nil {
		t.Fatal(err)
	}
	d := db.Delivery(pgstore.DeliveryOptions{})
	// Marks touch only the handle's own records: take the imported ones
	// over first, as a starting daemon does.
	if _, err := d.Pending(); err != nil {
		t.Fatal(err)
	}
	if err := d.Done("telegram:default:1:10"); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Cursors().SetCursor(ctx, "telegram:default", "offset", "1"); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	err = verifyMigration(ctx, &out, files, pg, 2)
	if !errors.Is(err, errProblems) {
		t.Fatalf("verify after changes: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		changed.String() + ": index entry or archived sessions differ",
		edited.String() + ": transcript " + e.SessionID + " differs at line",
		edited.String() + ": sessions show --context --json differs",
		`record "telegram:default:1:10": missing in the target`,
		`cursor "offset" of "telegram:default" differs in the target`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("verification output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestStorageMigrateRefusesLiveReplicas (issue 22 item 5, the attack:
// migrate into a database three replicas serve): while replicas hold the
// database (the locks HoldDaemon takes in replicas mode) the migration
// refuses in both directions, naming them, and writes nothing (doctor
// --fix takes the same lock: TestDoctorPostgresStoredChecks).
func TestStorageMigrateRefusesLiveReplicas(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	buildFilesState(t, stateDir)
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, stateDir, "", "")
	ctx := context.Background()
	var replicas []*pgstore.DB
	for range 3 {
		db, err := pgstore.Open(ctx, pgstore.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		release, err := db.HoldDaemon(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		replicas = append(replicas, db)
	}
	for _, dir := range [][]string{{"files", "postgres"}, {"postgres", "files"}} {
		r := gw(t, cfg, "storage", "migrate", "--from", dir[0], "--to", dir[1], "--postgres-url", url).want(t, 1)
		if !strings.Contains(r.Stderr, "stop the daemons using it first") || !strings.Contains(r.Stderr, "backend pid") {
			t.Fatalf("%s -> %s beside three replicas:\n%s", dir[0], dir[1], r.Stderr)
		}
	}
	if agents, err := replicas[0].Transfer().ExportAgents(ctx); err != nil || len(agents) != 0 {
		t.Fatalf("the refused migration wrote %v (%v)", agents, err)
	}
}
