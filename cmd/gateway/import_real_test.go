package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// realFixture is the state a real OpenClaw 2026.9.6 left behind, with
// what its own CLI reported of it (scripts/openclaw-fixture made both).
var realFixture = filepath.Join("..", "..", "internal", "ocfixture", "testdata", "openclaw-2026.9.6")

// realShown is one message of `sessions show --json` as its role, its
// text blocks joined, and the names of its tool calls and results.
type realShown struct {
	Role, Text string
	Calls      []string // toolCall ids
	ResultOf   string   // a toolResult's toolCallId
}

func realShow(t *testing.T, cfg, key string) []realShown {
	t.Helper()
	r := gw(t, cfg, "sessions", "show", key, "--json").want(t, 0)
	var v struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"toolCallId"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("sessions show %s --json: %v\n%s", key, err, r.Stdout)
	}
	out := make([]realShown, 0, len(v.Messages))
	for _, m := range v.Messages {
		s := realShown{Role: m.Role, ResultOf: m.ToolCallID}
		var blocks []struct {
			Type, Text, ID string
		}
		var plain string
		if json.Unmarshal(m.Content, &plain) == nil {
			s.Text = plain
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			t.Fatalf("%s: content %s: %v", key, m.Content, err)
		}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "toolCall":
				s.Calls = append(s.Calls, b.ID)
			}
		}
		if len(texts) > 0 {
			s.Text = strings.Join(texts, "\n")
		}
		out = append(out, s)
	}
	return out
}

// realMessageCounts counts, per session key, the messages on the active
// path of each session's current transcript, read straight from
// OpenClaw's agent database (its own materialised path, not the import).
func realMessageCounts(t *testing.T, state string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, "agents", "main", "agent", "openclaw-agent.sqlite")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT n.session_key, COUNT(a.message_position) FROM session_nodes n
		LEFT JOIN session_transcript_active_events a ON a.session_id = n.current_session_id
		GROUP BY n.session_key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportRealOpenClawFixture imports the state of a real OpenClaw
// 2026.9.6 run (DMs with pairing, allowFrom and a compaction, a tool call,
// a subagent, a group and a forum topic) and checks it against what
// OpenClaw's own CLI said of that state: every session of `openclaw
// sessions --json` is present under the same key, with the message count
// of its active path; `gateway sessions show` ends with the last messages
// `sessions.preview` showed (user and assistant text, as the preview
// shows them); each tool call has its result; the sessions' last route
// is the chat as the gateway addresses it; a second run imports nothing;
// and the daemon then answers the next message of an imported DM with the
// imported history in the model request.
func TestImportRealOpenClawFixture(t *testing.T) {
	src := filepath.Join(t.TempDir(), "oc")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(realFixture, "state"))); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Sessions []struct {
			Key, SessionID string
		} `json:"sessions"`
	}
	readJSON(t, filepath.Join(realFixture, "expected", "sessions.json"), &list)
	if len(list.Sessions) < 6 {
		t.Fatalf("expected/sessions.json lists %d sessions, want the fixture's 6", len(list.Sessions))
	}
	counts := realMessageCounts(t, src)

	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml := e2eConfig(stateDir, tg, model) +
		"session: {dmScope: per-channel-peer, maintenance: {pruneAfter: 87600h}}\n"
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := gw(t, cfg, "import", "openclaw", "--from", src).want(t, 0)
	if !strings.Contains(r.Stdout, "session keys 6: 6 imported") {
		t.Errorf("the import did not bring all 6 keys:\n%s", r.Stdout)
	}
	// Its three cron jobs are OpenClaw's own (memory dreaming, the
	// heartbeat, the skill review): skipped as managed, none imported.
	if !strings.Contains(r.Stdout, "cron jobs 3: 0 imported, 0 already present, 3 skipped") ||
		!regexp.MustCompile(`cron_jobs\.managed\s+3\s`).MatchString(r.Stdout) {
		t.Errorf("the fixture's managed cron jobs were not all skipped as managed:\n%s", r.Stdout)
	}
	if js := gw(t, cfg, "jobs", "list", "--all").want(t, 0); !strings.Contains(js.Stdout, "no jobs") {
		t.Errorf("jobs after importing only managed cron jobs:\n%s", js.Stdout)
	}

	for _, s := range list.Sessions {
		shown := realShow(t, cfg, s.Key)
		if len(shown) != counts[s.Key] || counts[s.Key] == 0 {
			t.Errorf("%s: sessions show has %d messages, OpenClaw's active path %d", s.Key, len(shown), counts[s.Key])
		}
		var preview struct {
			Items []struct{ Role, Text string } `json:"items"`
		}
		readJSON(t, filepath.Join(realFixture, "expected", "last-messages", realHistoryFile(s.Key)), &preview)
		var texts []string
		for _, m := range shown {
			if (m.Role == "user" || m.Role == "assistant") && m.Text != "" {
				texts = append(texts, m.Role+": "+m.Text)
			}
		}
		var want []string
		for _, it := range preview.Items {
			want = append(want, it.Role+": "+it.Text)
		}
		if len(want) == 0 || len(texts) < len(want) || !slices.Equal(texts[len(texts)-len(want):], want) {
			t.Errorf("%s: the last messages shown are\n%q\nOpenClaw's preview showed\n%q", s.Key, texts, want)
		}
		calls, results := map[string]bool{}, map[string]bool{}
		for _, m := range shown {
			for _, id := range m.Calls {
				calls[id] = true
			}
			if m.Role == "toolResult" {
				results[m.ResultOf] = true
			}
		}
		for id := range calls {
			if !results[id] {
				t.Errorf("%s: tool call %s has no result", s.Key, id)
			}
		}
		if s.Key == "agent:main:telegram:direct:1001" && len(calls) == 0 {
			t.Errorf("%s: the ls tool call was not imported", s.Key)
		}
	}

	// The sessions' last route is the chat as the gateway addresses it
	// (OpenClaw wrote "telegram:1001" and "telegram:-1003001:topic:42"):
	// a job added on an imported session goes there, and its delivery
	// context shows it.
	for _, c := range []struct {
		key, chat, thread, shown string
	}{
		{"agent:main:telegram:direct:1001", "1001", "", `telegram/default chat 1001
`},
		{"agent:main:telegram:group:-1002001", "-1002001", "", `telegram/default chat -1002001
`},
		{"agent:main:telegram:group:-1003001:topic:42", "-1003001", "42", `telegram/default chat -1003001 thread 42
`},
	} {
		if out := gw(t, cfg, "sessions", "show", c.key).want(t, 0).Stdout; !regexp.MustCompile(`delivered to:\s+` + c.shown).MatchString(out) {
			t.Errorf("%s: the imported delivery context is not %q:\n%s", c.key, c.shown, out)
		}
		r := gw(t, cfg, "jobs", "add", "--session", c.key, "tomorrow", "09:00", "check").want(t, 0)
		id := strings.TrimSuffix(strings.Fields(r.Stdout)[1], ":")
		if j := listJobs(t, cfg)[id]; j.Target.ChatID != c.chat || j.Target.ThreadID != c.thread || j.Target.IsTopic != (c.thread != "") {
			t.Errorf("%s: a job added on it targets %+v, want chat %s thread %q", c.key, j.Target, c.chat, c.thread)
		}
		gw(t, cfg, "jobs", "remove", id).want(t, 0)
	}

	again := gw(t, cfg, "import", "openclaw", "--from", src).want(t, 0)
	if !strings.Contains(again.Stdout, "0 imported, 6 already present") {
		t.Errorf("a second import brought something:\n%s", again.Stdout)
	}

	startDaemon(t, yaml)
	tg.DM(1003, "Carol once more.")
	waitReply(t, tg, "reply: Carol once more.")
	req, ok := lastRequestFor(model, "Carol once more.")
	if !ok {
		t.Fatal("the model never saw the message")
	}
	got := convo(req)
	want := []string{"user: Carol says hello.", "assistant: Echo: Carol says hello.", "user: Carol once more."}
	if len(got) < len(want) || !slices.Equal(got[len(got)-len(want):], want) {
		t.Fatalf("the request's history = %q, want it to end %q", got, want)
	}
}

// realHistoryFile names a key's last-messages file as the generator does.
func realHistoryFile(key string) string {
	return strings.NewReplacer(":", "_", "/", "_").Replace(key) + ".json"
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
