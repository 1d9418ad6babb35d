package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
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

// TestRoomSettingsFromConfig: per-room keys load through the strict
// loader and reach both the access decision and the room behaviour, at
// each level (account, group, topic; account, guild, channel).
func TestRoomSettingsFromConfig(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+roomsYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := accessPolicy(cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	room := roomFunc(p)
	topic := func(id string) channels.Inbound {
		return channels.Inbound{Channel: "telegram", AccountID: "default", ChatType: channels.Group, ChatID: "-100123",
			ThreadID: id, IsTopic: id != "", SenderID: "5", Text: "hi"}
	}
	g := room(topic(""))
	if g.HistoryLimit != 30 || g.SystemPrompt != "Answer briefly." || g.Streaming != channels.StreamProgress ||
		g.ErrorPolicy != channels.ErrorsOnce || g.AckReaction != "👀" || g.AgentID != "" || !g.RequireMention {
		t.Errorf("group room = %+v", g)
	}
	t7 := room(topic("7"))
	if t7.AgentID != "helper" || t7.ReplyToMode != channels.ReplyToAll || t7.RequireMention || t7.HistoryLimit != 30 {
		t.Errorf("topic 7 room = %+v", t7)
	}
	if d := p.Check(topic("7")); !d.Allowed() {
		t.Errorf("topic 7 needs no mention: %+v", d)
	}
	if d := p.Check(topic("9")); d.Allowed() || room(topic("9")).Enabled {
		t.Errorf("topic 9 is disabled: %+v", d)
	}
	ch := room(channels.Inbound{Channel: "discord", AccountID: "default", ChatType: channels.Channel, GuildID: "555", ChatID: "777"})
	if !ch.AutoThread || ch.Streaming != channels.StreamPartial || ch.HistoryLimit != 10 || !ch.InheritParent || ch.AgentID != "helper" {
		t.Errorf("discord channel room = %+v", ch)
	}
	if w := room(channels.Inbound{Channel: "web", ChatType: channels.Direct}); w.Streaming != channels.StreamOff || w.HistoryLimit != 0 {
		t.Errorf("web room = %+v", w)
	}
}

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
	startFromFile(t, path, &fakeClock{})

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

// TestRoomStreamingFromAccount: an account's streaming.mode reaches its
// rooms; other accounts and channels keep the default (off).
func TestRoomStreamingFromAccount(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte(`
channels:
  telegram:
    accounts:
      default: {token: "1:x", streaming: {mode: progress}}
      quiet: {token: "2:y"}
  discord:
    accounts:
      default: {token: "d", streaming: {mode: partial}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := accessPolicy(cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	room := roomFunc(p)
	for _, tt := range []struct{ channel, account, want string }{
		{"telegram", "default", channels.StreamProgress},
		{"telegram", "quiet", channels.StreamOff},
		{"discord", "default", channels.StreamPartial},
		{"web", "default", channels.StreamOff},
	} {
		if got := room(channels.Inbound{Channel: tt.channel, AccountID: tt.account, ChatType: channels.Direct}).Streaming; got != tt.want {
			t.Errorf("%s/%s: streaming %q, want %q", tt.channel, tt.account, got, tt.want)
		}
	}
}

// TestRoomSettingsReloadWithoutRestart: account-level room settings
// (streaming, historyLimit, errorPolicy, replyToMode, ackReaction) and
// Discord's thread.inheritParent are not restart-only changes.
func TestRoomSettingsReloadWithoutRestart(t *testing.T) {
	load := func(tg, dc string) *configs.Config {
		cfg, err := configs.LoadBytes([]byte(`channels: {telegram: {accounts: {default: {token: "1:a", `+tg+`}}}, discord: {accounts: {default: {token: d, `+dc+`}}}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	before := load(`streaming: {mode: "off"}`, `historyLimit: 5`)
	after := load(`streaming: {mode: partial}, errorPolicy: once, replyToMode: all, ackReaction: "👀", historyLimit: 9`,
		`historyLimit: 0, thread: {inheritParent: true}`)
	if got := restartOnly(before, after); len(got) != 0 {
		t.Errorf("restartOnly = %v, want none", got)
	}
	if got := restartOnly(before, load(`streaming: {mode: "off"}, pollTimeoutSeconds: 5`, `historyLimit: 5`)); len(got) != 1 {
		t.Errorf("a changed poll timeout should need a restart: %v", got)
	}
	p, err := accessPolicy(after, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got := roomFunc(p)(channels.Inbound{Channel: "telegram", AccountID: "default", ChatType: channels.Direct}).Streaming; got != channels.StreamPartial {
		t.Errorf("reloaded rooms stream %q", got)
	}
}
