package main

import (
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
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
