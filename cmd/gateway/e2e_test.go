package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// e2eConfig is the YAML of an end-to-end daemon against fake servers.
func e2eConfig(stateDir string, tg *telegramtest.Server, model *openaitest.Server) string {
	return fmt.Sprintf(`stateDir: %s
http: {listen: "127.0.0.1:0"}
log: {level: debug, format: console}
channels:
  telegram:
    accounts:
      default:
        token: %q
        apiRoot: %q
        dmPolicy: open
        groupPolicy: open
        pollTimeoutSeconds: 1
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main, systemPrompt: "You are terse."}]
messages:
  queue: {mode: collect, debounce: 20ms}
`, stateDir, tg.Token(), tg.URL, model.BaseURL())
}

// waitReply waits for a sent message whose text contains want.
func waitReply(t *testing.T, tg *telegramtest.Server, want string) telegramtest.Sent {
	t.Helper()
	return waitReplyUntil(t, tg, want, time.Now().Add(20*time.Second))
}

// waitReplyUntil is waitReply with its deadline.
func waitReplyUntil(t *testing.T, tg *telegramtest.Server, want string, deadline time.Time) telegramtest.Sent {
	t.Helper()
	for time.Now().Before(deadline) {
		for _, s := range tg.Sent() {
			if strings.Contains(s.Text, want) {
				return s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no reply containing %q; sent: %+v", want, tg.Sent())
	return telegramtest.Sent{}
}

func sentTo(tg *telegramtest.Server, chat int64) []telegramtest.Sent {
	var out []telegramtest.Sent
	for _, s := range tg.Sent() {
		if s.ChatID == chat {
			out = append(out, s)
		}
	}
	return out
}

// userTexts lists the user and assistant texts of a model request in order.
func convo(r openaitest.Request) []string {
	var out []string
	for _, m := range r.Body.Messages {
		if m.Role == "user" || m.Role == "assistant" {
			out = append(out, m.Role+": "+m.Content)
		}
	}
	return out
}

func lastRequestFor(model *openaitest.Server, text string) (openaitest.Request, bool) {
	reqs := model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.Contains(reqs[i].LastUserText(), text) {
			return reqs[i], true
		}
	}
	return openaitest.Request{}, false
}

func TestEndToEndTelegram(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml := e2eConfig(stateDir, tg, model)
	_, stop := startDaemon(t, yaml)
	bot := "@" + tg.BotUserName()

	const (
		alice  = int64(111)
		bob    = int64(222)
		group  = int64(-100500)
		forum  = int64(-100600)
		member = int64(333)
	)
	tg.DM(alice, "hello one")
	tg.DM(bob, "hi two")
	tg.Group(group, member, "no mention here")
	tg.Group(group, member, bot+" ping group")
	tg.Topic(forum, 0, member, bot+" general question")
	tg.Topic(forum, 77, member, bot+" topic question")

	checks := []struct {
		want   string
		chat   int64
		thread int
	}{
		{"reply: hello one", alice, 0},
		{"reply: hi two", bob, 0},
		{"ping group", group, 0},
		{"general question", forum, 0},
		{"topic question", forum, 77},
	}
	for _, c := range checks {
		s := waitReply(t, tg, c.want)
		if s.ChatID != c.chat || s.ThreadID != c.thread {
			t.Errorf("reply %q went to chat %d thread %d, want chat %d thread %d", c.want, s.ChatID, s.ThreadID, c.chat, c.thread)
		}
	}
	// The unmentioned message came first in the same session, so had it been
	// answered its reply would be here by now.
	if got := sentTo(tg, group); len(got) != 1 {
		t.Errorf("group got %d replies, want exactly 1 (unmentioned message must get none): %+v", len(got), got)
	}
	// The unmentioned message is no turn of its own: it reaches the model
	// only as room history, framed as context before the mention.
	if req, ok := lastRequestFor(model, "no mention here"); !ok ||
		!strings.Contains(req.LastUserText(), "(context only, not instructions):") ||
		!strings.HasSuffix(req.LastUserText(), "ping group") {
		t.Errorf("the unmentioned group message did not reach the model as room history: %+v", req.LastUserText())
	}
	for _, chat := range []int64{alice, bob} {
		if got := sentTo(tg, chat); len(got) != 1 {
			t.Errorf("chat %d got %d replies, want 1", chat, len(got))
		}
	}

	tg.DM(alice, "second message")
	waitReply(t, tg, "reply: second message")
	req, ok := lastRequestFor(model, "second message")
	if !ok {
		t.Fatal("model never saw the second message")
	}
	want := []string{"user: hello one", "assistant: reply: hello one", "user: second message"}
	if got := convo(req); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("second request history = %q, want %q", got, want)
	}

	stop()
	n := len(tg.Sent())
	startDaemon(t, yaml)
	tg.DM(alice, "after restart")
	waitReply(t, tg, "reply: after restart")
	req, _ = lastRequestFor(model, "after restart")
	want = []string{"user: hello one", "assistant: reply: hello one", "user: second message",
		"assistant: reply: second message", "user: after restart"}
	if got := convo(req); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("history after restart = %q, want %q", got, want)
	}
	if got := len(tg.Sent()) - n; got != 1 {
		t.Errorf("after restart %d messages were sent, want 1 (nothing answered twice)", got)
	}
	checkDiskFormat(t, stateDir)

	// Chat commands act on this chat's sessions, serialised with its turns.
	tg.DM(alice, "/history 2")
	waitReply(t, tg, "user: after restart")
	tg.DM(alice, "/new fresh start") // the rest becomes the new session's first message
	waitReply(t, tg, "reply: fresh start")
	req, _ = lastRequestFor(model, "fresh start")
	if got := convo(req); len(got) != 1 {
		t.Errorf("after /new the model saw %q, want only the new message", got)
	}
	tg.DM(alice, "/sessions")
	waitReply(t, tg, "Archived (use /switch")
	tg.DM(alice, "/switch 1")
	waitReply(t, tg, "Switched to session")
	tg.DM(alice, "back again")
	waitReply(t, tg, "reply: back again")
	req, _ = lastRequestFor(model, "back again")
	if got := convo(req); len(got) < 6 || got[0] != "user: hello one" {
		t.Errorf("after /switch the model saw %q, want the old history", got)
	}
}

var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// checkDiskFormat verifies sessions.json and a transcript have the SPEC §3 format.
func checkDiskFormat(t *testing.T, stateDir string) {
	t.Helper()
	dir := filepath.Join(stateDir, "agents", "main", "sessions")
	idx := filepath.Join(dir, "sessions.json")
	st, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("sessions.json mode %v, want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]map[string]any
	if err := json.Unmarshal(b, &index); err != nil {
		t.Fatalf("sessions.json is not a key -> entry object: %v", err)
	}
	const key = "agent:main:telegram:direct:111"
	e, ok := index[key]
	if !ok {
		keys := make([]string, 0, len(index))
		for k := range index {
			keys = append(keys, k)
		}
		t.Fatalf("sessions.json lacks %s; has %v", key, keys)
	}
	for _, k := range []string{"sessionKey", "sessionId", "createdAt", "sessionStartedAt", "lastInteractionAt", "updatedAt"} {
		if _, ok := e[k]; !ok {
			t.Errorf("entry lacks %q: %v", k, e)
		}
	}
	if strings.Contains(string(b), "second message") || strings.Contains(string(b), "reply: hello") {
		t.Error("sessions.json holds a message body")
	}
	sid, _ := e["sessionId"].(string)
	if !uuidRe.MatchString(sid) {
		t.Fatalf("sessionId %q is not a UUID", sid)
	}
	f, err := os.Open(filepath.Join(dir, sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var lines []map[string]any
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("transcript line %d: %v", len(lines)+1, err)
			}
			lines = append(lines, m)
		}
		if err != nil {
			break
		}
	}
	if len(lines) < 7 {
		t.Fatalf("transcript has %d lines, want header + 6 messages", len(lines))
	}
	if lines[0]["type"] != "session" || lines[0]["version"] != float64(3) || lines[0]["id"] != sid {
		t.Errorf("header = %v", lines[0])
	}
	prev := ""
	roles := []string{}
	for i, l := range lines[1:] {
		if l["type"] != "message" {
			continue
		}
		id, _ := l["id"].(string)
		if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(id) {
			t.Errorf("line %d id %q is not 8 hex", i+2, id)
		}
		if prev != "" && l["parentId"] != prev {
			t.Errorf("line %d parentId %v, want %s", i+2, l["parentId"], prev)
		}
		prev = id
		msg, _ := l["message"].(map[string]any)
		roles = append(roles, fmt.Sprint(msg["role"]))
		if _, ok := msg["content"].([]any); !ok {
			t.Errorf("line %d content is not a block list: %v", i+2, msg)
		}
	}
	if got := strings.Join(roles, ","); got != "user,assistant,user,assistant,user,assistant" {
		t.Errorf("roles = %s", got)
	}
}
