package gatewayd

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
)

// TestMediaRuntimeFollowsConfig: per-account caps and the text cap come
// from the config; the transcriber exists only with media.audio; a
// mediaMaxMb edit is applied by hot reload (not named as needing a restart).
func TestMediaRuntimeFollowsConfig(t *testing.T) {
	load := func(y string) *configs.Config { return loadYAML(t, y) }
	base := load("channels: {telegram: {accounts: {default: {token: '1:a'}, big: {token: '2:b', mediaMaxMb: 50}}}}\n")
	m, err := mediaRuntime(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.MaxBytes(channels.AccountKey{Channel: "telegram", AccountID: "default"}); got != 20<<20 {
		t.Errorf("default account cap %d", got)
	}
	if got := m.MaxBytes(channels.AccountKey{Channel: "telegram", AccountID: "big"}); got != 50<<20 {
		t.Errorf("big account cap %d", got)
	}
	if m.MaxTextBytes != 32<<10 || m.Transcribe != nil {
		t.Errorf("text cap %d, transcriber set %v", m.MaxTextBytes, m.Transcribe != nil)
	}
	next := load("channels: {telegram: {accounts: {default: {token: '1:a', mediaMaxMb: 5}, big: {token: '2:b', mediaMaxMb: 50}}}}\n" +
		"providers: {local: {type: echo}, oa: {type: openai, baseURL: 'http://127.0.0.1:1/v1'}}\n" +
		"media: {maxTextKb: 8, audio: {provider: oa}}\n")
	m, err = mediaRuntime(next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.MaxBytes(channels.AccountKey{Channel: "telegram", AccountID: "default"}) != 5<<20 || m.MaxTextBytes != 8<<10 || m.Transcribe == nil {
		t.Errorf("after the edit: cap %d, text cap %d, transcriber %v", m.MaxBytes(channels.AccountKey{Channel: "telegram", AccountID: "default"}), m.MaxTextBytes, m.Transcribe != nil)
	}
	for _, k := range restartOnly(base, next) {
		if k != "providers" {
			t.Errorf("%s named as needing a restart", k)
		}
	}
}

// TestInboundSettingsReachTheDispatcher: messages.inbound is part of the
// runtime that start and every hot reload hand the dispatcher.
func TestInboundSettingsReachTheDispatcher(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte("stateDir: "+t.TempDir()+
		"\nmessages: {inbound: {debounce: 700ms, maxParts: 4, byChannel: {discord: {debounce: 2s}}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{log: zap.NewNop(), cfg: cfg}
	rt, _, err := d.runtime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rt.Inbound, cfg.Messages.Inbound) || rt.Inbound.Debounce != 700*time.Millisecond ||
		rt.Inbound.ByChannel["discord"].Debounce != 2*time.Second {
		t.Errorf("runtime inbound %+v, want %+v", rt.Inbound, cfg.Messages.Inbound)
	}
}

// TestPlatformAdminsReachTheVerdict: commands.platformAdmins, at start and
// in every reloaded runtime, marks an admitted, unprivileged group sender
// for the platform admin check; never an owner, a DM, or anyone with the
// setting off.
func TestPlatformAdminsReachTheVerdict(t *testing.T) {
	group := channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-1001234"}, ChatType: channels.Group,
		SenderID: "7", Mentioned: true, Text: "/reset"}
	owner := group
	owner.SenderID = "9"
	dm := channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "7"}, ChatType: channels.Direct,
		SenderID: "7", Mentioned: true, Text: "/reset"}
	tests := []struct {
		name, commands string
		in             channels.Inbound
		want           dispatch.Verdict
	}{
		{"on: member", "{platformAdmins: true, owners: ['telegram:9']}", group, dispatch.Verdict{Allow: true, AskPlatform: true}},
		{"on: owner", "{platformAdmins: true, owners: ['telegram:9']}", owner, dispatch.Verdict{Allow: true, Privileged: true}},
		{"on: dm", "{platformAdmins: true}", dm, dispatch.Verdict{Allow: true, Privileged: true}},
		{"off: member", "{platformAdmins: false}", group, dispatch.Verdict{Allow: true}},
		{"default: member", "{}", group, dispatch.Verdict{Allow: true}},
	}
	load := func(t *testing.T, commands string) *configs.Config {
		t.Helper()
		cfg, err := configs.LoadBytes([]byte("stateDir: /tmp/x\ncommands: "+commands+"\n"+
			`channels: {telegram: {accounts: {default: {token: "1:x", dmPolicy: open, groupPolicy: open}}}}`+"\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, tt.commands)
			d := &Daemon{log: zap.NewNop(), cfg: cfg}
			rt, _, err := d.runtime(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := rt.Access(tt.in); got != tt.want {
				t.Errorf("verdict %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := restartOnly(load(t, "{}"), load(t, "{platformAdmins: true}")); len(got) != 0 {
		t.Errorf("turning platformAdmins on needs a restart: %v", got)
	}
}

// TestDocumentedAllowListFormsReachThePolicy: every allow-list form the
// example config documents — an empty rule for one group, for every group
// ("*"), for one Discord guild — survives loading and lets that group in.
func TestDocumentedAllowListFormsReachThePolicy(t *testing.T) {
	tests := []struct {
		name, yaml string
		in         channels.Inbound
	}{
		{"telegram group", `channels: {telegram: {accounts: {default: {token: "1:x", groupPolicy: allowlist, groups: {"-1001234": {}}}}}}`,
			channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-1001234"}, ChatType: channels.Group, SenderID: "7", Mentioned: true, Text: "hi"}},
		{"telegram any group", `channels: {telegram: {accounts: {default: {token: "1:x", groupPolicy: allowlist, groups: {"*": {}}}}}}`,
			channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-100999"}, ChatType: channels.Group, SenderID: "7", Mentioned: true, Text: "hi"}},
		{"discord guild", `channels: {discord: {accounts: {default: {token: "x", groupPolicy: allowlist, guilds: {"555": {}}}}}}`,
			channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: "42"}, GuildID: "555", ChatType: channels.Group, SenderID: "7", Mentioned: true, Text: "hi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+tt.yaml+"\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := accessPolicy(cfg, nil, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			if d := p.Check(tt.in); !d.Allowed() {
				t.Fatalf("group message refused: %+v", d)
			}
			other := tt.in
			other.ChatID, other.GuildID = "-100777", "777"
			if tt.name != "telegram any group" {
				if d := p.Check(other); d.Allowed() {
					t.Errorf("a group not listed was let in")
				}
			}
		})
	}
}

// TestReloadNamesChannelAccountChangesNeedingRestart: allow-list edits
// apply at once and are not reported; a new bot or a changed token is
// named as needing a restart.
func TestReloadNamesChannelAccountChangesNeedingRestart(t *testing.T) {
	load := func(y string) *configs.Config { return loadYAML(t, y) }
	base := load(`channels: {telegram: {accounts: {default: {token: "1:a", allowFrom: ["1"]}}}}`)
	if got := restartOnly(base, load(`channels: {telegram: {accounts: {default: {token: "1:a", allowFrom: ["1", "2"], groups: {"*": {}}}}}}`)); len(got) != 0 {
		t.Errorf("access edits reported as needing a restart: %v", got)
	}
	got := restartOnly(base, load(`channels: {telegram: {accounts: {default: {token: "1:b"}, second: {token: "2:c"}}}, discord: {accounts: {default: {token: "d"}}}}`))
	want := []string{"channels.telegram.accounts.default", "channels.telegram.accounts.second (added)", "channels.discord.accounts.default (added)"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("restartOnly = %v, missing %q", got, w)
		}
	}
}

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
		return channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-100123", ThreadID: id, IsTopic: id != ""}, ChatType: channels.Group, SenderID: "5", Text: "hi"}
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
	ch := room(channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: "777"}, ChatType: channels.Channel, GuildID: "555"})
	if !ch.AutoThread || ch.Streaming != channels.StreamPartial || ch.HistoryLimit != 10 || ch.InheritParent != channels.InheritDigest || ch.AgentID != "helper" {
		t.Errorf("discord channel room = %+v", ch)
	}
	if w := room(channels.Inbound{Address: channels.Address{Channel: "web"}, ChatType: channels.Direct}); w.Streaming != channels.StreamOff || w.HistoryLimit != 0 {
		t.Errorf("web room = %+v", w)
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
		if got := room(channels.Inbound{Address: channels.Address{Channel: tt.channel, AccountID: tt.account}, ChatType: channels.Direct}).Streaming; got != tt.want {
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
	if got := roomFunc(p)(channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default"}, ChatType: channels.Direct}).Streaming; got != channels.StreamPartial {
		t.Errorf("reloaded rooms stream %q", got)
	}
}
