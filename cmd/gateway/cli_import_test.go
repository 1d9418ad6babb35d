package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/internal/openclaw"
	"github.com/gateway/gateway/internal/openclaw/openclawtest"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// ocAgents lists the fixture's agents, so `sessions show` serves both.
const ocAgents = "agents: {list: [{id: main}, {id: ops}]}\n"

// showLast returns the texts of `sessions show KEY --json`'s messages.
func showMessages(t *testing.T, cfg, key string) []string {
	t.Helper()
	r := gw(t, cfg, "sessions", "show", key, "--json").want(t, 0)
	var v struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("sessions show %s --json: %v\n%s", key, err, r.Stdout)
	}
	var out []string
	for _, m := range v.Messages {
		var parts []string
		for _, c := range m.Content {
			parts = append(parts, c.Type+":"+c.Text)
		}
		out = append(out, m.Role+" "+strings.Join(parts, " "))
	}
	return out
}

// checkImported checks every expected key of the fixture shows its
// message count and last message through `gateway sessions show`.
func checkImported(t *testing.T, cfg, backend string) {
	t.Helper()
	for key, want := range openclawtest.Expected {
		msgs := showMessages(t, cfg, key)
		if len(msgs) != want.Messages || !strings.Contains(msgs[len(msgs)-1], want.Last) {
			t.Errorf("%s: %s shows %d messages %q, want %d ending %q", backend, key, len(msgs), msgs, want.Messages, want.Last)
		}
	}
	msgs := strings.Join(showMessages(t, cfg, "agent:main:main"), "\n")
	for _, w := range []string{"assistant toolCall:", "toolResult text:" + openclawtest.BigResult[:40]} {
		if !strings.Contains(msgs, w) {
			t.Errorf("%s: agent:main:main lacks %q:\n%s", backend, w, msgs)
		}
	}
}

// TestImportOpenClaw: a dry run writes nothing and prints the plan; the
// import brings every session over with its messages, tool pairs and
// last message as `sessions show` prints them, and the pairing approvals;
// a second run imports nothing; the source is byte for byte unchanged;
// --json reports the unmapped fields with counts.
func TestImportOpenClaw(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	before := openclawtest.Snapshot(t, oc)
	stateDir := filepath.Join(t.TempDir(), "state")
	cfg := writeConfig(t, stateDir, "", ocAgents)

	r := gw(t, cfg, "import", "openclaw", "--from", oc, "--dry-run").want(t, 0)
	for _, w := range []string{"dry run: nothing written", "agent main (sqlite layout", "agent ops (json layout",
		"import  agent:ops:discord:direct:777", "agent:ops:discord:dm:777", "session keys 4: 4 imported, 0 already present",
		"pairing approvals 3 added", "sessionKey agent:<id>:cron:…",
		"cron jobs 9: 0 imported, 0 already present, 9 skipped", "cron_jobs.accountNotServed"} {
		if !strings.Contains(r.Stdout, w) {
			t.Fatalf("dry run lacks %q:\n%s", w, r.Stdout)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(stateDir, "agents", "*", "sessions", "*.json*")); len(m) != 0 {
		t.Fatalf("the dry run wrote sessions: %v", m)
	}
	if ents, _ := os.ReadDir(filepath.Join(stateDir, "pairing")); len(ents) != 0 {
		t.Fatalf("the dry run wrote pairing: %v", ents)
	}

	r = gw(t, cfg, "import", "openclaw", "--from", oc).want(t, 0)
	if !strings.Contains(r.Stdout, "session keys 4: 4 imported") || !strings.Contains(r.Stdout, "pairing approvals 3 added, 0 already present") {
		t.Fatalf("import:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "note: 4 imported session(s) were last updated more than session.maintenance.pruneAfter (720h0m0s) ago") {
		t.Errorf("no note about sessions maintenance would archive:\n%s", r.Stdout)
	}
	t.Logf("import:\n%s", r.Stdout)
	checkImported(t, cfg, "files")
	p := gw(t, cfg, "pairing", "list").want(t, 0)
	for _, id := range []string{"111", "222", "333"} {
		if !strings.Contains(p.Stdout, id) {
			t.Errorf("pairing list lacks %s:\n%s", id, p.Stdout)
		}
	}

	r = gw(t, cfg, "import", "openclaw", "--from", oc, "--json").want(t, 0)
	var js struct {
		Result struct {
			Imported, Present, Approvals, ApprovalsPresent int
		} `json:"result"`
		Unmapped []struct {
			Field string `json:"field"`
			Count int    `json:"count"`
		} `json:"unmapped"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.Stdout)
	}
	if js.Result.Imported != 0 || js.Result.Present != 4 || js.Result.Approvals != 0 || js.Result.ApprovalsPresent != 3 {
		t.Fatalf("second run: %+v\n%s", js.Result, r.Stdout)
	}
	unmapped := map[string]int{}
	for _, u := range js.Unmapped {
		unmapped[u.Field] = u.Count
	}
	if unmapped["transcript.abandonedBranch"] != 3 || unmapped["pairing.whatsapp"] != 1 {
		t.Fatalf("unmapped %v", unmapped)
	}
	checkImported(t, cfg, "files (after the second run)")
	if after := openclawtest.Snapshot(t, oc); !maps.Equal(before, after) {
		t.Fatal("the import changed the OpenClaw state dir")
	}

	// --agent narrows the import; an unknown agent is named.
	cfg2 := writeConfig(t, filepath.Join(t.TempDir(), "s2"), "", ocAgents)
	r = gw(t, cfg2, "import", "openclaw", "--from", oc, "--agent", "ops").want(t, 0)
	if !strings.Contains(r.Stdout, "session keys 2: 2 imported") || strings.Contains(r.Stdout, "agent main (") {
		t.Fatalf("--agent ops:\n%s", r.Stdout)
	}
	r = gw(t, cfg2, "import", "openclaw", "--from", oc, "--agent", "nobody").want(t, 1)
	if !strings.Contains(r.Stderr, `no agent "nobody"`) {
		t.Fatalf("--agent nobody: %s", r.Stderr)
	}
	gw(t, cfg2, "import", "openclaw").want(t, 2)
}

// ocJobsConfig serves the Telegram account the fixture's cron jobs
// announce to, in the time zone they expect.
const ocJobsConfig = "channels: {telegram: {accounts: {default: {token: \"123:abc\"}}}}\njobs: {timezone: " + openclawtest.TZ + "}\n"

// listJobs returns `gateway jobs list --all --json`'s jobs by id.
func listJobs(t *testing.T, cfg string) map[string]sessions.Job {
	t.Helper()
	r := gw(t, cfg, "jobs", "list", "--all", "--json").want(t, 0)
	var v struct {
		Jobs []sessions.Job `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("jobs list --json: %v\n%s", err, r.Stdout)
	}
	out := map[string]sessions.Job{}
	for _, j := range v.Jobs {
		out[j.ID] = j
	}
	return out
}

// checkImportedJobs checks the store holds, as `gateway jobs list` shows
// them, exactly the fixture's mapped cron jobs, each on its session and
// room with its text and schedule, active and due after now.
func checkImportedJobs(t *testing.T, cfg, backend string) {
	t.Helper()
	got := listJobs(t, cfg)
	n := 0
	for src, want := range openclawtest.Jobs {
		j, ok := got[openclaw.JobID(src)]
		if want.Skip != "" {
			if ok {
				t.Errorf("%s: skipped job %s was imported: %+v", backend, src, j)
			}
			continue
		}
		n++
		room := j.Target.ChatKey()
		if j.Target.ThreadID != "" {
			room += ":" + j.Target.ThreadID
		}
		if !ok || j.AgentID != want.Agent || j.SessionKey != want.Key || room != want.Room || j.Text != want.Text ||
			j.Schedule.Cron != want.Cron || j.Schedule.TZ != want.TZ || !j.Schedule.At.Equal(want.At) ||
			j.State != sessions.JobActive || !j.NextAt.After(time.Now()) {
			t.Errorf("%s: job of %s is %+v (present %v), want %+v", backend, src, j, ok, want)
		}
	}
	if len(got) != n {
		t.Errorf("%s: the store holds %d jobs, want %d", backend, len(got), n)
	}
}

// TestImportOpenClawJobs: the users' cron jobs come over as gateway jobs
// (`gateway jobs list` shows them on the right session and room, with
// their text and schedule); the managed, disabled, silent, Discord and
// past ones are listed as skipped with why; a dry run writes no job; a
// second import adds none.
func TestImportOpenClawJobs(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "state"), "", ocAgents+ocJobsConfig)

	r := gw(t, cfg, "import", "openclaw", "--from", oc, "--dry-run").want(t, 0)
	if !strings.Contains(r.Stdout, "cron jobs 9: 4 imported, 0 already present, 5 skipped") {
		t.Fatalf("dry run:\n%s", r.Stdout)
	}
	if got := listJobs(t, cfg); len(got) != 0 {
		t.Fatalf("the dry run wrote jobs: %v", got)
	}

	r = gw(t, cfg, "import", "openclaw", "--from", oc).want(t, 0)
	for _, w := range []string{`cron jobs 9: 4 imported, 0 already present, 5 skipped`,
		`import\s+standup\s+` + openclaw.JobID("standup") + `\s+0 9 \* \* 1-5 Europe/Berlin\s+agent:main:telegram:group:-1001:topic:7`,
		`skipped\s+heartbeat\s+-.*manages itself`, `cron_jobs\.managed\s+1\s`, `cron_jobs\.disabled\s+1\s`, `cron_jobs\.delivery=none\s+1\s`,
		`cron_jobs\.channel=discord\s+1\s`, `cron_jobs\.atPassed\s+1\s`, `cron_jobs\.schedule\.noTimeZone\s+1\s`} {
		if !regexp.MustCompile(w).MatchString(r.Stdout) {
			t.Errorf("import lacks %q:\n%s", w, r.Stdout)
		}
	}
	checkImportedJobs(t, cfg, "files")

	r = gw(t, cfg, "import", "openclaw", "--from", oc, "--json").want(t, 0)
	var js struct {
		Result openclaw.Result `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.Stdout)
	}
	if js.Result.Jobs != 9 || js.Result.JobsImported != 0 || js.Result.JobsPresent != 4 || js.Result.JobsSkipped != 5 {
		t.Fatalf("second run: %+v", js.Result)
	}
	checkImportedJobs(t, cfg, "files (after the second run)")
}

// TestImportOpenClawBackends: the import writes through the seam of
// whichever backend the config names: on sqlite and on postgres every
// session and cron job shows as on files, and a second run imports
// nothing.
func TestImportOpenClawBackends(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	url := pgtest.NewDatabase(t)
	for name, extra := range map[string]string{
		"sqlite":   "storage: {backend: sqlite}\n",
		"postgres": "storage: {backend: postgres, postgres: {url: \"" + url + "\"}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), "", ocAgents+ocJobsConfig+extra)
			r := gw(t, cfg, "import", "openclaw", "--from", oc).want(t, 0)
			if !strings.Contains(r.Stdout, "session keys 4: 4 imported") || !strings.Contains(r.Stdout, "-> "+name) ||
				!strings.Contains(r.Stdout, "cron jobs 9: 4 imported") {
				t.Fatalf("import into %s:\n%s", name, r.Stdout)
			}
			checkImported(t, cfg, name)
			checkImportedJobs(t, cfg, name)
			r = gw(t, cfg, "import", "openclaw", "--from", oc).want(t, 0)
			if !strings.Contains(r.Stdout, "session keys 4: 0 imported, 4 already present") ||
				!strings.Contains(r.Stdout, "cron jobs 9: 0 imported, 4 already present") {
				t.Fatalf("second import into %s:\n%s", name, r.Stdout)
			}
		})
	}
}

// TestImportOpenClawRefusesRunningDaemon: beside a daemon holding the
// state dir the import refuses, naming its pid, and writes nothing.
func TestImportOpenClawRefusesRunningDaemon(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	stateDir := t.TempDir()
	cfg := writeConfig(t, stateDir, "", ocAgents)
	release, err := gatewayd.LockStateDir(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	r := gw(t, cfg, "import", "openclaw", "--from", oc).want(t, 1)
	if !strings.Contains(r.Stderr, "import openclaw: ") || !strings.Contains(r.Stderr, "another gateway (pid "+strconv.Itoa(os.Getpid())+")") {
		t.Fatalf("import beside a daemon:\n%s", r.Stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(stateDir, "agents", "*", "sessions", "*.json*")); len(m) != 0 {
		t.Fatalf("the refused import wrote: %v", m)
	}
}

// TestExportOpenClawRoundTrip: export writes the JSON-era layout, and
// importing that again gives the same keys, message counts and texts.
func TestExportOpenClawRoundTrip(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "a"), "", ocAgents)
	gw(t, cfg, "import", "openclaw", "--from", oc).want(t, 0)
	out := filepath.Join(t.TempDir(), "export")
	r := gw(t, cfg, "export", "openclaw", "--to", out).want(t, 0)
	if !strings.Contains(r.Stdout, "agents 2, sessions 4, archived 1, transcripts 5") {
		t.Fatalf("export:\n%s", r.Stdout)
	}
	var idx map[string]map[string]any
	b, err := os.ReadFile(filepath.Join(out, "agents", "main", "sessions", "sessions.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if e := idx["agent:main:main"]; e == nil || e["sessionId"] != openclawtest.MainSession || e["skillsSnapshot"] == nil {
		t.Fatalf("exported entry %v", e)
	} else if _, ok := e["updatedAt"].(float64); !ok {
		t.Fatalf("updatedAt %v is not epoch milliseconds", e["updatedAt"])
	}
	r = gw(t, cfg, "export", "openclaw", "--to", out).want(t, 1)
	if !strings.Contains(r.Stderr, "sessions.json exists") {
		t.Fatalf("export over an export: %s", r.Stderr)
	}

	cfg2 := writeConfig(t, filepath.Join(t.TempDir(), "b"), "", ocAgents)
	r = gw(t, cfg2, "import", "openclaw", "--from", out).want(t, 0)
	if !strings.Contains(r.Stdout, "session keys 4: 4 imported") {
		t.Fatalf("import of the export:\n%s", r.Stdout)
	}
	for key := range openclawtest.Expected {
		a, b := showMessages(t, cfg, key), showMessages(t, cfg2, key)
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: after export and import:\n%q\nwant\n%q", key, b, a)
		}
	}
}
