package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// gatewayBin is the binary built once for the CLI tests.
var gatewayBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gateway-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	gatewayBin = filepath.Join(dir, "gateway")
	out, err := exec.Command("go", "build", "-o", gatewayBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the gateway binary: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// result is one CLI run.
type result struct {
	Stdout, Stderr string
	Code           int
}

// gw runs the built binary with args and the config file cfg ("" for none).
func gw(t *testing.T, cfg string, args ...string) result {
	t.Helper()
	if cfg != "" {
		args = append([]string{"--config", cfg}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gatewayBin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("gateway %v: %v", args, err)
	}
	return r
}

// want fails unless r exited with code.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, code, r.Stdout, r.Stderr)
	}
	return r
}

// writeConfig writes a config with stateDir and http.listen (a closed port
// unless given) plus extra YAML, and returns its path.
func writeConfig(t *testing.T, stateDir, listen, extra string) string {
	t.Helper()
	if listen == "" {
		listen = "127.0.0.1:1" // nothing listens: commands act on the store
	}
	y := fmt.Sprintf("stateDir: %s\nhttp:\n  listen: %s\nlog: {level: warn, format: console}\n%s", stateDir, listen, extra)
	p := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// seed creates web sessions with n user/assistant exchanges each and
// returns their keys.
func seed(t *testing.T, stateDir string, at time.Time, msgs ...[]string) []routing.Key {
	t.Helper()
	// The store's clock reads at: the sessions start then (a new session's
	// idle clock never starts before the session does).
	mgr, err := filestore.Open(filestore.Options{StateDir: stateDir, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mgr.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	st, err := mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var keys []routing.Key
	for i, texts := range msgs {
		k, err := routing.PeerKey("main", "web", "", routing.Direct, fmt.Sprintf("peer-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "web", ChatType: "direct", AccountID: "default",
			To: k.Peer, From: k.Peer, Title: texts[0], At: at})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := st.Transcript(e.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		for _, txt := range texts {
			reply := sessions.Message{Role: sessions.RoleAssistant, Provider: "local", Model: "echo",
				Content: []sessions.Content{{Type: sessions.BlockText, Text: "echo: " + txt}}, Timestamp: at.UnixMilli()}
			if _, err := tr.Append(ctx, sessions.UserText(txt, at), reply); err != nil {
				t.Fatal(err)
			}
			st.AddCounters(k, sessions.Counters{Messages: 2, TotalTokens: 10})
		}
		keys = append(keys, k)
	}
	return keys
}

func TestUsageErrorsExit2(t *testing.T) {
	if r := gw(t, "", "version").want(t, 0); !strings.HasPrefix(r.Stdout, "gateway ") {
		t.Errorf("version: %q", r.Stdout)
	}
	for _, args := range [][]string{
		{"sessions"},
		{"sessions", "bogus"},
		{"sessions", "show"},
		{"sessions", "list", "extra"},
		{"sessions", "list", "--nope"},
		{"config"},
		{"pairing", "approve", "telegram"},
		{"route", "--peer", "1"},
		{"route", "--channel", "telegram", "--peer", "1", "--chat-type", "dm"},
		{"route", "--channel", "telegram", "--peer", "1", "--topic"},
		{"doctor", "now"},
	} {
		r := gw(t, "", args...)
		if r.Code != 2 || r.Stderr == "" {
			t.Errorf("gateway %v: exit %d, stderr %q; want 2 and a message", args, r.Code, r.Stderr)
		}
	}
}

func TestConfigValidateAndPrintRedacts(t *testing.T) {
	state := t.TempDir()
	good := writeConfig(t, state, "", `
providers:
  local: {type: echo}
  openai: {type: openai, baseURL: "http://127.0.0.1:1/v1", apiKey: sk-very-secret}
storage:
  postgres: {url: "postgres://gw:pg-very-secret@db.example:5432/gateway?sslmode=require&password=pg-other-secret"}
`)
	r := gw(t, good, "config", "validate").want(t, 0)
	if !strings.Contains(r.Stdout, "config ok") {
		t.Errorf("validate: %q", r.Stdout)
	}
	r = gw(t, good, "config", "print").want(t, 0)
	if strings.Contains(r.Stdout, "sk-very-secret") || strings.Contains(r.Stdout, "pg-very-secret") || strings.Contains(r.Stdout, "pg-other-secret") {
		t.Errorf("print leaks a secret:\n%s", r.Stdout)
	}
	for _, want := range []string{"apiKey: REDACTED", "url: postgres://gw:xxxxx@db.example:5432/gateway?password=xxxxx&sslmode=require", "keepRecentTokens: 20000", "stateDir: " + state, "pruneAfter: 720h0m0s"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("print lacks %q:\n%s", want, r.Stdout)
		}
	}
	// The HTTP token comes from the environment here; it is redacted too.
	cmd := exec.Command(gatewayBin, "--config", good, "config", "print", "--json")
	cmd.Env = append(os.Environ(), "GATEWAY_HTTP_TOKEN=tok-secret-123")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(out, &tree); err != nil {
		t.Fatalf("print --json: %v\n%s", err, out)
	}
	if got := tree["http"].(map[string]any)["token"]; got != "REDACTED" || bytes.Contains(out, []byte("tok-secret-123")) {
		t.Errorf("http.token printed as %v", got)
	}

	bad := writeConfig(t, state, "", "session:\n  resetMode: daily\n")
	r = gw(t, bad, "config", "validate").want(t, 1)
	if !strings.Contains(r.Stderr, "resetmode") && !strings.Contains(r.Stderr, "resetMode") {
		t.Errorf("invalid config error does not name the key: %q", r.Stderr)
	}
}

func TestRoute(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", `
agents:
  list: [{id: main}, {id: helper}]
bindings:
  - agentId: helper
    match: {channel: telegram, peer: {kind: group, id: "-100123"}}
`)
	r := gw(t, cfg, "route", "--channel", "telegram", "--chat-type", "group", "--peer", "-100123",
		"--thread", "7", "--topic", "--sender", "42", "--json").want(t, 0)
	var got routeResult
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if got.AgentID != "helper" || got.SessionKey != "agent:helper:telegram:group:-100123:topic:7" ||
		got.ParentKey != "agent:helper:telegram:group:-100123" || got.ResetType != "thread" {
		t.Errorf("group topic route: %+v", got)
	}
	r = gw(t, cfg, "route", "--channel", "discord", "--peer", "987").want(t, 0)
	if !strings.Contains(r.Stdout, "agent:       main") || !strings.Contains(r.Stdout, "session key: agent:main:discord:direct:987") {
		t.Errorf("DM route:\n%s", r.Stdout)
	}
}

func TestSessionsListShowResetDeleteCompact(t *testing.T) {
	state := t.TempDir()
	old := time.Now().Add(-3 * time.Hour)
	keys := seed(t, state, old, []string{"first question", "second question"}, []string{"other chat"})
	cfg := writeConfig(t, state, "", "session:\n  reset: {mode: idle, idleMinutes: 60}\n")

	r := gw(t, cfg, "sessions", "list", "--json").want(t, 0)
	var rows []listRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if len(rows) != 2 {
		t.Fatalf("rows: %+v", rows)
	}
	for _, row := range rows {
		if !row.WouldReset || row.ResetReason != "idle" || row.AgentID != "main" {
			t.Errorf("row %+v: want an idle rollover pending", row)
		}
	}
	r = gw(t, cfg, "sessions", "list", "--agent", "main").want(t, 0)
	if !strings.Contains(r.Stdout, "now (idle)") || !strings.Contains(r.Stdout, keys[0].String()) {
		t.Errorf("table:\n%s", r.Stdout)
	}

	r = gw(t, cfg, "sessions", "show", keys[0].String(), "--json").want(t, 0)
	var shown struct {
		Session  sessions.Entry
		Messages []sessions.Message
	}
	if err := json.Unmarshal([]byte(r.Stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Messages) != 4 || shown.Messages[3].Text() != "echo: second question" {
		t.Errorf("show: %+v", shown.Messages)
	}
	// By session id, and the model context.
	r = gw(t, cfg, "sessions", "show", shown.Session.SessionID, "--context").want(t, 0)
	if !strings.Contains(r.Stdout, "user: first question") || !strings.Contains(r.Stdout, "assistant: echo: second question") {
		t.Errorf("show --context:\n%s", r.Stdout)
	}
	gw(t, cfg, "sessions", "show", "agent:main:web:direct:nobody").want(t, 1)

	// Compact in this process (no daemon), with the echo provider.
	r = gw(t, cfg, "sessions", "compact", keys[0].String()).want(t, 0)
	if !strings.Contains(r.Stdout, "compacted") || !strings.Contains(r.Stdout, "1 compactions") {
		t.Errorf("compact: %s", r.Stdout)
	}
	r = gw(t, cfg, "sessions", "reset", keys[0].String()).want(t, 0)
	if !strings.Contains(r.Stdout, "new session") {
		t.Errorf("reset: %s", r.Stdout)
	}
	r = gw(t, cfg, "sessions", "delete", keys[1].String()).want(t, 0)
	if !strings.Contains(r.Stdout, "archived") {
		t.Errorf("delete: %s", r.Stdout)
	}
	r = gw(t, cfg, "sessions", "list", "--json").want(t, 0)
	rows = nil
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].SessionKey != keys[0].String() || rows[0].SessionID == shown.Session.SessionID {
		t.Errorf("after reset and delete: %+v", rows)
	}
	dir := filepath.Join(state, "agents", "main", "sessions")
	for _, pat := range []string{shown.Session.SessionID + ".jsonl.reset.*", "*.jsonl.deleted.*"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pat)); len(m) != 1 {
			t.Errorf("archived %s: %v", pat, m)
		}
	}
}

func TestPairingListApprove(t *testing.T) {
	state := t.TempDir()
	cfg := writeConfig(t, state, "", "")
	ps, err := access.OpenPairingStore(filepath.Join(state, "pairing"), access.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := ps.Request("telegram", "default", "4242", "Ada", "4242", false)
	if err != nil {
		t.Fatal(err)
	}
	r := gw(t, cfg, "pairing", "list", "--json").want(t, 0)
	if !strings.Contains(r.Stdout, req.Code) || !strings.Contains(r.Stdout, `"approved": []`) {
		t.Errorf("list: %s", r.Stdout)
	}
	gw(t, cfg, "pairing", "approve", "telegram", "WRONGCODE").want(t, 1)
	r = gw(t, cfg, "pairing", "approve", "telegram", strings.ToLower(req.Code)).want(t, 0)
	if !strings.Contains(r.Stdout, "approved telegram sender 4242") {
		t.Errorf("approve: %s", r.Stdout)
	}
	ok, err := ps.IsApproved("telegram", "default", "4242", false)
	if err != nil || !ok {
		t.Errorf("the daemon's store does not see the approval: %v %v", ok, err)
	}
	r = gw(t, cfg, "pairing", "list", "telegram").want(t, 0)
	if !strings.Contains(r.Stdout, "4242") || strings.Contains(r.Stdout, req.Code) {
		t.Errorf("list after approve:\n%s", r.Stdout)
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestDoctorDetectsAndRepairs damages a state directory in every way doctor
// knows, checks the report, repairs it and checks that no transcript was
// lost.
func TestDoctorDetectsAndRepairs(t *testing.T) {
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil { // t.TempDir is 0755; doctor rightly flags that
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	keys := seed(t, state, at, []string{"alpha one", "alpha two"}, []string{"beta"}, []string{"gamma"})
	cfg := writeConfig(t, state, "", "")
	gw(t, cfg, "doctor").want(t, 0)

	dir := filepath.Join(state, "agents", "main", "sessions")
	indexPath := filepath.Join(dir, "sessions.json")
	idx, err := readIndex(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	alpha, beta, gamma := idx[keys[0].String()], idx[keys[1].String()], idx[keys[2].String()]
	hashes := map[string][32]byte{}
	for _, e := range []sessions.Entry{alpha, beta, gamma} {
		hashes[e.SessionID] = fileHash(t, filepath.Join(dir, e.SessionID+".jsonl"))
	}

	// Damage: beta's entry vanishes (orphan transcript), alpha's counters
	// lag, an entry points at a missing transcript, permissions are loose,
	// and a dead process left lock metadata behind.
	delete(idx, keys[1].String())
	alpha.MessageCount = 1
	idx[keys[0].String()] = alpha
	ghost, _ := routing.PeerKey("main", "web", "", routing.Direct, "ghost")
	idx[ghost.String()] = sessions.Entry{SessionKey: ghost.String(), SessionID: "99999999-9999-4999-8999-999999999999",
		MessageCount: 3, CreatedAt: at, UpdatedAt: at}
	data, err := encodeIndex(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(indexPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, os.Chmod(filepath.Join(dir, gamma.SessionID+".jsonl"), 0o644))
	must(t, os.Chmod(dir, 0o755))
	lock := indexPath + ".lock"
	meta := `{"pid":999999,"startTime":"2020-01-01T00:00:00Z","createdAt":"2020-01-01T00:00:00Z","host":"gone"}`
	must(t, os.WriteFile(lock, []byte(meta), 0o600))
	// Written an hour ago, as the entries say: doctor spares the counters
	// of a transcript written within its settle time (a turn in flight).
	for _, e := range []sessions.Entry{alpha, beta, gamma} {
		must(t, os.Chtimes(filepath.Join(dir, e.SessionID+".jsonl"), at, at))
	}

	r := gw(t, cfg, "doctor", "--json").want(t, 1)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	kinds := map[string]int{}
	for _, p := range rep.Problems {
		kinds[p.Kind]++
		if p.Fixed {
			t.Errorf("fixed without --fix: %+v", p)
		}
	}
	want := map[string]int{kindOrphanTranscript: 1, kindCounterLag: 1, kindMissingTranscript: 1, kindPermissions: 2, kindStaleLock: 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%s reported %d times, want %d (report: %s)", k, kinds[k], n, r.Stdout)
		}
	}
	r = gw(t, cfg, "doctor").want(t, 1)
	if !strings.Contains(r.Stdout, "--fix would:") {
		t.Errorf("text report does not say what --fix would do:\n%s", r.Stdout)
	}

	r = gw(t, cfg, "doctor", "--fix").want(t, 0)
	if !strings.Contains(r.Stdout, "0 remaining") {
		t.Errorf("fix report:\n%s", r.Stdout)
	}
	r = gw(t, cfg, "doctor").want(t, 0)
	if !strings.Contains(r.Stdout, "no problems found") {
		t.Errorf("after --fix:\n%s", r.Stdout)
	}

	// Nothing lost: every transcript is byte-for-byte intact, beta is back.
	for id, h := range hashes {
		if fileHash(t, filepath.Join(dir, id+".jsonl")) != h {
			t.Errorf("transcript %s changed", id)
		}
	}
	idx, err = readIndex(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := idx[keys[1].String()]; !ok || e.SessionID != beta.SessionID || e.MessageCount != 2 || e.Title != "beta" {
		t.Errorf("re-created entry %+v", e)
	}
	if e := idx[keys[0].String()]; e.MessageCount != 4 {
		t.Errorf("alpha's messageCount %d after repair, want 4", e.MessageCount)
	}
	if e := idx[ghost.String()]; e.MessageCount != 0 {
		t.Errorf("ghost entry %+v, want zeroed counters", e)
	}
	if b, _ := os.ReadFile(lock); len(b) != 0 {
		t.Errorf("lock metadata not truncated: %q", b)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode after fix: %v", fi.Mode())
	}
	// The sessions package reads the repaired index.
	r = gw(t, cfg, "sessions", "show", keys[1].String(), "--json").want(t, 0)
	if !strings.Contains(r.Stdout, "echo: beta") {
		t.Errorf("re-created session unreadable: %s", r.Stdout)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDoctorChecksStorageAndJournal: doctor reports low free space and a
// journal line damaged outside the gateway, and changes nothing.
func TestDoctorChecksStorageAndJournal(t *testing.T) {
	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	cfg := writeConfig(t, state, "", "")
	ingress := filepath.Join(state, "ingress")
	must(t, os.MkdirAll(ingress, 0o700))
	journal := filepath.Join(ingress, "journal.jsonl")
	lines := `{"op":"accept","rec":{"id":"tg:default:1:1","agentId":"main","sessionKey":"agent:main:tg:direct:1","payload":{},"acceptedAt":"2026-01-01T00:00:00Z"}}
{"op":"acc garbage
{"op":"done","ids":["tg:default:1:1"]}
`
	must(t, os.WriteFile(journal, []byte(lines), 0o600))
	r := gw(t, cfg, "doctor", "--json").want(t, 1)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != kindJournalDamage || !strings.Contains(rep.Problems[0].Detail, "line 2") {
		t.Fatalf("report %s", r.Stdout)
	}
	t.Setenv("GATEWAY_DOCTOR_MIN_FREE_MB", "1000000000")
	r = gw(t, cfg, "doctor").want(t, 1)
	if !strings.Contains(r.Stdout, kindLowDisk) {
		t.Errorf("low free space not reported:\n%s", r.Stdout)
	}
	if b, _ := os.ReadFile(journal); string(b) != lines {
		t.Error("doctor changed the journal")
	}
}

// TestDoctorQuarantinesBadTranscriptLine: a line damaged in the middle of a
// transcript is found by doctor and moved aside by --fix, nothing lost.
func TestDoctorQuarantinesBadTranscriptLine(t *testing.T) {
	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	keys := seed(t, state, time.Now().Add(-time.Hour), []string{"one", "two", "three"})
	cfg := writeConfig(t, state, "", "")
	dir := filepath.Join(state, "agents", "main", "sessions")
	idx, err := readIndex(filepath.Join(dir, "sessions.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, idx[keys[0].String()].SessionID+".jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	damaged := strings.Join(lines[:2], "") + "{garbage in the middle\n" + strings.Join(lines[2:], "")
	must(t, os.WriteFile(path, []byte(damaged), 0o600))

	r := gw(t, cfg, "doctor", "--json").want(t, 1)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != kindBadLine || !strings.Contains(rep.Problems[0].Detail, "line 3") {
		t.Fatalf("report %s", r.Stdout)
	}
	gw(t, cfg, "doctor", "--fix").want(t, 0)
	gw(t, cfg, "doctor").want(t, 0)
	if got, _ := os.ReadFile(path); string(got) != string(b) {
		t.Error("the transcript without the bad line differs from the original")
	}
	if q, _ := os.ReadFile(path + ".quarantine"); string(q) != "{garbage in the middle\n" {
		t.Errorf("quarantine holds %q", q)
	}
}

// validate tells the operator when a cost budget cannot bind: a model an
// agent runs has no price (exit 0: the config loads).
func TestConfigValidateNotesUnpricedModels(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", `
providers:
  openai: {type: openai, baseURL: "http://127.0.0.1:1/v1", apiKey: sk-x}
agents:
  defaults: {model: openai/gpt-4o}
limits:
  defaults: {sender: {monthly: {costUsd: 5}}}
`)
	r := gw(t, cfg, "config", "validate").want(t, 0)
	if !strings.Contains(r.Stdout, "config ok") || !strings.Contains(r.Stdout, "note: limits: a costUsd budget is set, but openai/gpt-4o") {
		t.Errorf("validate: %q", r.Stdout)
	}
}
