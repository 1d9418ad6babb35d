package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
)

const roomsYAML = `
agents:
  list: [{id: main}, {id: helper}]
channels:
  telegram:
    accounts:
      default:
        token: "1:x"
        groupPolicy: allowlist
        streaming: {mode: progress}
        errorPolicy: once
        ackReaction: "👀"
        groups:
          "-100123":
            historyLimit: 30
            systemPrompt: "Answer briefly."
            topics:
              "7": {agentId: helper, requireMention: false, replyToMode: all}
              "9": {enabled: false}
  discord:
    accounts:
      default:
        token: "x"
        groupPolicy: allowlist
        historyLimit: 10
        thread: {inheritParent: true}
        guilds:
          "555":
            channels:
              "777": {autoThread: true, streaming: {mode: partial}, agentId: helper}
`

// TestRoomConfigRefused: bad room keys are refused by the loader with the
// key's path.
func TestRoomConfigRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown agent", `channels: {telegram: {accounts: {default: {token: "1:x", groups: {"-1": {topics: {"3": {agentId: nobody}}}}}}}}`,
			`channels.telegram.accounts.default.groups.-1.topics.3.agentId: "nobody" is not an agent`},
		{"history limit", `channels: {discord: {accounts: {default: {token: "x", historyLimit: 201}}}}`, "historyLimit: 201 is outside 0..200"},
		{"streaming mode", `channels: {telegram: {accounts: {default: {token: "1:x", streaming: {mode: fast}}}}}`, "streaming.mode"},
		{"topic key typo", `channels: {telegram: {accounts: {default: {token: "1:x", groups: {"-1": {topcs: {}}}}}}}`, "topcs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+tc.yaml+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRouteRoomAgent: a forum topic with its own agentId gets that
// agent's session key (gateway route shows it, binding "room").
func TestRouteRoomAgent(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", roomsYAML)
	r := gw(t, cfg, "route", "--channel", "telegram", "--chat-type", "group", "--peer", "-100123",
		"--thread", "7", "--topic", "--sender", "42", "--json").want(t, 0)
	var got routeResult
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	want := routeResult{AgentID: "helper", SessionKey: "agent:helper:telegram:group:-100123:topic:7",
		ParentKey: "agent:helper:telegram:group:-100123", Binding: "room", ResetType: "thread"}
	if got != want {
		t.Fatalf("route = %+v, want %+v", got, want)
	}
	r = gw(t, cfg, "route", "--channel", "telegram", "--chat-type", "group", "--peer", "-100123",
		"--thread", "8", "--topic", "--sender", "42", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || got.AgentID != "main" {
		t.Fatalf("topic 8 should stay with main: %+v %v", got, err)
	}
}

// TestRoomSettingsHotReload: a forum topic's systemPrompt and agentId
// reach the model, and an edit of them applies to the next message
// without a restart (the topic moves to the other agent's session).
func TestRoomSettingsHotReload(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	path := filepath.Join(dir, "gateway.yaml")
	write := func(topic string) {
		t.Helper()
		y := fmt.Sprintf(`stateDir: %s
http: {listen: "127.0.0.1:0"}
log: {level: debug, format: console}
channels:
  telegram:
    accounts:
      default:
        token: %q
        apiRoot: %q
        groupPolicy: allowlist
        pollTimeoutSeconds: 1
        groups:
          "-100123":
            topics:
              "7": %s
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main, systemPrompt: "MAIN-PROMPT"}, {id: helper, systemPrompt: "HELPER-PROMPT"}]
`, state, tg.Token(), tg.URL, topic, model.BaseURL())
		must(t, os.WriteFile(path, []byte(y), 0o600))
	}
	write(`{systemPrompt: "TOPIC-SEVEN", requireMention: false}`)
	startFromFile(t, path)

	system := func(text string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if r, ok := lastRequestFor(model, text); ok && len(r.Body.Messages) > 0 {
				return r.Body.Messages[0].Content
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no model request for %q", text)
		return ""
	}
	tg.Topic(-100123, 7, 42, "first question")
	if s := system("first question"); !strings.Contains(s, "MAIN-PROMPT") || !strings.Contains(s, "TOPIC-SEVEN") {
		t.Fatalf("system prompt %q: want the agent's and the topic's", s)
	}
	write(`{agentId: helper, systemPrompt: "RELOADED", requireMention: false}`)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		text := fmt.Sprintf("after the edit %d", i)
		tg.Topic(-100123, 7, 42, text)
		s := system(text)
		if strings.Contains(s, "HELPER-PROMPT") && strings.Contains(s, "RELOADED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edit never applied: system prompt %q", s)
		}
		time.Sleep(200 * time.Millisecond)
	}
	idx, err := os.ReadFile(filepath.Join(state, "agents", "helper", "sessions", "sessions.json"))
	if err != nil {
		// The entry may still be only in the change log.
		idx, err = os.ReadFile(filepath.Join(state, "agents", "helper", "sessions", "sessions.delta.jsonl"))
	}
	if err != nil || !strings.Contains(string(idx), "agent:helper:telegram:group:-100123:topic:7") {
		t.Fatalf("the helper agent has no session for topic 7: %v\n%s", err, idx)
	}
}
