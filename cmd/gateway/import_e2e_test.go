package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/internal/openclaw"
	"github.com/gateway/gateway/internal/openclaw/openclawtest"
	"github.com/gateway/gateway/sessions"
)

// TestImportOpenClawThenAnswer: after `gateway import openclaw`, the
// daemon answers the next message of an imported session with the
// imported history in the model request — the DM main session (dmScope
// main, as OpenClaw's default) with its compaction summary first, and a
// forum topic whose imported group activation "always" admits a message
// without a mention.
func TestImportOpenClawThenAnswer(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	yaml, cfg := importConfig(t, tg, model, "dmScope: main, ")
	gw(t, cfg, "import", "openclaw", "--from", oc, "--agent", "main").want(t, 0)
	startDaemon(t, yaml)

	tg.DM(555, "What about Sunday?")
	waitReply(t, tg, "reply: What about Sunday?")
	req, ok := lastRequestFor(model, "What about Sunday?")
	if !ok {
		t.Fatal("the model never saw the message")
	}
	got := convo(req)
	want := []string{"assistant: Sunny, 21°C.", "user: And tomorrow?", "assistant: Rain tomorrow.", "user: What about Sunday?"}
	if len(got) != 5 || !strings.Contains(got[0], "The user asked about the weather in Paris: sunny.") ||
		strings.Join(got[1:], "|") != strings.Join(want, "|") {
		t.Fatalf("the request's history = %q, want the compaction summary then %q", got, want)
	}

	tg.Topic(-1001, 7, 333, "status please")
	waitReply(t, tg, "status please")
	req, _ = lastRequestFor(model, "status please")
	got = convo(req)
	if len(got) < 3 || got[0] != "user: ping the topic" || got[1] != "assistant: Pong from the topic." {
		t.Fatalf("the topic request's history = %q, want the imported exchange first", got)
	}
	if req.Body.Model != "claude-sonnet" {
		t.Errorf("the topic's request went to model %q, want its imported override claude-sonnet", req.Body.Model)
	}
}

// TestImportOpenClawJobFires: an imported OpenClaw reminder (a one-shot
// announcing to a forum topic, written "telegram:<chat>:topic:<id>") is
// fired by the daemon's scheduler when due: its text reaches the model in
// the topic's imported session, with that session's history, and the
// answer goes to the topic.
func TestImportOpenClawJobFires(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	// Due far enough ahead that the import (a process of its own, on a
	// loaded machine) reads it as still to come: a one-shot already past
	// is not imported.
	due := time.Now().Add(15 * time.Second).UTC()
	openclawtest.AddCronJob(t, oc, map[string]any{"id": "soon", "agentId": "main", "name": "soon", "enabled": true,
		"schedule": map[string]any{"kind": "at", "at": due.Format(time.RFC3339Nano)}, "sessionTarget": "isolated",
		"payload":  map[string]any{"kind": "agentTurn", "message": "Stand-up starts now"},
		"delivery": map[string]any{"mode": "announce", "to": "telegram:-1001:topic:7"}})
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	yaml, cfg := importConfig(t, tg, model, "")
	r := gw(t, cfg, "import", "openclaw", "--from", oc).want(t, 0)
	if !regexp.MustCompile(`import\s+soon\s+` + openclaw.JobID("soon") + `\s+once`).MatchString(r.Stdout) {
		t.Fatalf("the reminder was not imported:\n%s", r.Stdout)
	}
	startDaemon(t, yaml)

	if time.Now().After(due) {
		t.Fatalf("the import and start took past the reminder's time %s", due)
	}
	s := waitReplyUntil(t, tg, "Stand-up starts now", due.Add(30*time.Second))
	if s.ChatID != -1001 || s.ThreadID != 7 {
		t.Fatalf("the reminder's answer went to chat %d thread %d, want the topic -1001/7", s.ChatID, s.ThreadID)
	}
	req, ok := lastRequestFor(model, "Stand-up starts now")
	if !ok {
		t.Fatal("the model never saw the reminder")
	}
	if got := convo(req); len(got) < 3 || got[0] != "user: ping the topic" || got[1] != "assistant: Pong from the topic." {
		t.Fatalf("the reminder's request history = %q, want the topic's imported exchange first", got)
	}
	if js := listJobs(t, cfg); js[openclaw.JobID("soon")].State != sessions.JobDone {
		t.Errorf("after firing, the job is %+v, want done", js[openclaw.JobID("soon")])
	}
}

// importConfig writes the daemon's configuration for an import test (a
// new state dir, tg and model) and returns it and its path. The fixture's
// sessions are from 2026-09: a pruneAfter that keeps them current (the
// import warns about the default's). The topic's imported model override
// names anthropic/claude-sonnet: a provider of that name (the fake)
// serves it. session is put first in the session settings
// ("dmScope: main, ").
func importConfig(t *testing.T, tg *telegramtest.Server, model *openaitest.Server, session string) (yaml, path string) {
	t.Helper()
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml = strings.Replace(e2eConfig(stateDir, tg, model), "providers:\n",
		"providers:\n  anthropic: {type: openai, baseURL: \""+model.BaseURL()+"\", apiKey: test-key, maxRetries: 1, "+
			// The imported override's model is one the config offers (OPERATIONS: "Coming from OpenClaw").
			"models: {claude-sonnet: {price: {input: 3, output: 15}}}}\n", 1) +
		"session: {" + session + "maintenance: {pruneAfter: 87600h}}\n"
	path = filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return yaml, path
}

// TestImportOpenClawLastRoute: an imported session's last route holds the
// chat as the gateway addresses it (OpenClaw wrote "telegram:555" and
// "telegram:-1001" with thread 7), so before the session hears a new
// message a job added with `gateway jobs add --session` targets the forum
// topic -1001/7, and `gateway sessions send` reaches the topic and the DM
// main session's chat 555.
func TestImportOpenClawLastRoute(t *testing.T) {
	oc := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	yaml, cfg := importConfig(t, tg, model, "dmScope: main, ")
	gw(t, cfg, "import", "openclaw", "--from", oc, "--agent", "main").want(t, 0)

	const topic = "agent:main:telegram:group:-1001:topic:7"
	r := gw(t, cfg, "jobs", "add", "--session", topic, "tomorrow", "09:00", "Stand-up").want(t, 0)
	f := strings.Fields(r.Stdout)
	if len(f) < 2 {
		t.Fatalf("jobs add printed %q", r.Stdout)
	}
	j, ok := listJobs(t, cfg)[strings.TrimSuffix(f[1], ":")]
	if want := (sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-1001", ChatType: "group", ThreadID: "7", IsTopic: true}); !ok || j.Target != want {
		t.Errorf("the job added to the imported topic targets %+v, want %+v (add printed %q)", j.Target, want, r.Stdout)
	}

	addr, _ := startDaemon(t, yaml)
	// The CLI reaches the daemon at the config's listen address.
	if err := os.WriteFile(cfg, []byte(strings.Replace(yaml, `listen: "127.0.0.1:0"`, `listen: "`+addr+`"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, text string
		chat      int64
		thread    int
	}{{topic, "Operator to the topic", -1001, 7}, {"agent:main:main", "Operator to the DM", 555, 0}} {
		r := gw(t, cfg, "sessions", "send", c.key, c.text)
		if r.Code != 0 {
			t.Errorf("sessions send %s: exit %d: %s%s", c.key, r.Code, r.Stdout, r.Stderr)
			continue
		}
		if s := waitReply(t, tg, c.text); s.ChatID != c.chat || s.ThreadID != c.thread {
			t.Errorf("the operator's message to %s went to chat %d thread %d, want %d/%d", c.key, s.ChatID, s.ThreadID, c.chat, c.thread)
		}
	}
}
