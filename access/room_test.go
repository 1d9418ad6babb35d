package access

import (
	"testing"

	"github.com/gateway/gateway/channels"
)

func intp(v int) *int { return &v }

// TestRoomResolution: the account's defaults, then the group (or guild),
// then the topic (or channel, thread) refine a room's settings; a Telegram
// topic rule applies only under its own group; enabled: false and
// requireMention follow the access rules.
func TestRoomResolution(t *testing.T) {
	off := false
	tg := Config{GroupPolicy: GroupAllowlist, Room: channels.RoomDefaults{ErrorPolicy: channels.ErrorsOnce, AckReaction: "👀"},
		Groups: map[string]GroupRule{
			"-100": {RoomConfig: channels.RoomConfig{AgentID: "ops", SystemPrompt: "group prompt",
				RoomDefaults: channels.RoomDefaults{HistoryLimit: intp(10), Streaming: &channels.StreamingConfig{Mode: channels.StreamProgress}}},
				Topics: map[string]GroupRule{
					"7": {RequireMention: &off, RoomConfig: channels.RoomConfig{AgentID: "helper",
						RoomDefaults: channels.RoomDefaults{ReplyToMode: channels.ReplyToOff, AckReaction: "off"}}},
					"9": {Enabled: &off},
				}},
			"-200": {},
		}}
	dc := Config{GroupPolicy: GroupOpen, GroupsKey: "guilds", InheritParent: channels.InheritDigest, Groups: map[string]GroupRule{
		"555": {RoomConfig: channels.RoomConfig{SystemPrompt: "guild"},
			Channels: map[string]GroupRule{
				"777": {RoomConfig: channels.RoomConfig{AutoThread: boolp(true), RoomDefaults: channels.RoomDefaults{HistoryLimit: intp(0)}}},
			}},
	}}
	p, err := New(map[Account]Config{{"telegram", "default"}: tg, {"discord", "default"}: dc}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tgIn := func(chat, topic string) channels.Inbound {
		return channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: chat, ThreadID: topic, IsTopic: topic != ""}, ChatType: channels.Group, SenderID: "1"}
	}
	dcIn := func(guild, chat, thread string) channels.Inbound {
		return channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: chat, ThreadID: thread}, ChatType: channels.Channel, GuildID: guild, SenderID: "1"}
	}
	for _, tc := range []struct {
		name string
		in   channels.Inbound
		want func(r channels.Room) bool
	}{
		{"group inherits account defaults", tgIn("-100", ""), func(r channels.Room) bool {
			return r.Configured && r.Enabled && r.AgentID == "ops" && r.SystemPrompt == "group prompt" && r.HistoryLimit == 10 &&
				r.Streaming == channels.StreamProgress && r.ErrorPolicy == channels.ErrorsOnce && r.AckReaction == "👀" &&
				r.ReplyToMode == channels.ReplyToFirst && r.RequireMention
		}},
		{"topic refines its group", tgIn("-100", "7"), func(r channels.Room) bool {
			return r.AgentID == "helper" && r.SystemPrompt == "group prompt" && r.HistoryLimit == 10 &&
				r.ReplyToMode == channels.ReplyToOff && r.AckReaction == "" && !r.RequireMention && r.Enabled
		}},
		{"disabled topic", tgIn("-100", "9"), func(r channels.Room) bool { return !r.Enabled }},
		{"topic 7 of another group is not topic 7 of -100", tgIn("-200", "7"), func(r channels.Room) bool {
			return r.Enabled && r.AgentID == "" && r.RequireMention && r.HistoryLimit == 50 && r.ReplyToMode == channels.ReplyToFirst
		}},
		{"unlisted group under allowlist", tgIn("-300", ""), func(r channels.Room) bool { return !r.Enabled && !r.Configured }},
		{"telegram DM: no mention gate, account defaults", channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "5"},
			ChatType: channels.Direct, SenderID: "5"}, func(r channels.Room) bool {
			return !r.RequireMention && r.ErrorPolicy == channels.ErrorsOnce && r.AgentID == ""
		}},
		{"discord channel refines its guild", dcIn("555", "777", ""), func(r channels.Room) bool {
			return r.SystemPrompt == "guild" && r.AutoThread && r.HistoryLimit == 0 && r.InheritParent == channels.InheritDigest && r.Enabled
		}},
		{"discord thread of that channel", channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: "777", ThreadID: "888"}, ChatType: channels.Channel,
			GuildID: "555", ParentChatID: "777", SenderID: "1"}, func(r channels.Room) bool {
			return r.AutoThread && r.HistoryLimit == 0
		}},
		{"other discord channel: guild only, default history", dcIn("555", "778", ""), func(r channels.Room) bool {
			return r.SystemPrompt == "guild" && !r.AutoThread && r.HistoryLimit == 20
		}},
		{"unknown account: defaults", channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "other", ChatID: "2"}, ChatType: channels.Channel,
			GuildID: "1"}, func(r channels.Room) bool {
			return !r.Enabled && r.HistoryLimit == 20 && r.Streaming == channels.StreamOff
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := p.Room(tc.in); !tc.want(r) {
				t.Errorf("Room = %+v", r)
			}
		})
	}
	// Check agrees with the room's Enabled and RequireMention.
	if d := p.Check(tgIn("-100", "9")); d.Allowed() {
		t.Error("a disabled topic admitted a message")
	}
	if d := p.Check(tgIn("-100", "7")); !d.Allowed() {
		t.Errorf("topic 7 needs no mention, got %+v", d)
	}
	if d := p.Check(tgIn("-200", "7")); d.Allowed() || d.Reason != ReasonNotMentioned {
		t.Errorf("topic 7 of -200 should need a mention: %+v", d)
	}
}

func TestRoomConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"history too long", Config{Groups: map[string]GroupRule{"-1": {RoomConfig: channels.RoomConfig{
			RoomDefaults: channels.RoomDefaults{HistoryLimit: intp(500)}}}}}, "groups.-1.historyLimit: 500 is outside 0..200"},
		{"streaming mode", Config{Groups: map[string]GroupRule{"-1": {Topics: map[string]GroupRule{"3": {RoomConfig: channels.RoomConfig{
			RoomDefaults: channels.RoomDefaults{Streaming: &channels.StreamingConfig{Mode: "fast"}}}}}}}},
			`groups.-1.topics.3.streaming.mode: "fast" is not off, progress or partial`},
		{"account error policy", Config{Room: channels.RoomDefaults{ErrorPolicy: "loud"}}, `errorPolicy: "loud" is not always, once or silent`},
		{"reply mode", Config{Groups: map[string]GroupRule{"*": {RoomConfig: channels.RoomConfig{
			RoomDefaults: channels.RoomDefaults{ReplyToMode: "some"}}}}}, `groups.*.replyToMode: "some" is not first, all or off`},
		{"topics in discord", Config{GroupsKey: "guilds", Groups: map[string]GroupRule{"5": {Topics: map[string]GroupRule{"1": {}}}}},
			"guilds.5.topics: Discord has no topics"},
		{"channels in telegram", Config{Groups: map[string]GroupRule{"-5": {Channels: map[string]GroupRule{"1": {}}}}},
			"groups.-5.channels: Telegram groups have topics"},
		{"channel twice", Config{GroupsKey: "guilds", Groups: map[string]GroupRule{
			"5": {Channels: map[string]GroupRule{"9": {}}}, "6": {Channels: map[string]GroupRule{"9": {}}}}},
			"guilds.6.channels.9: channel 9 is already configured at guilds.5.channels.9"},
		{"nested too deep", Config{GroupsKey: "guilds", Groups: map[string]GroupRule{
			"5": {Channels: map[string]GroupRule{"9": {Channels: map[string]GroupRule{"10": {}}}}}}},
			"guilds.5.channels.9: topics and channels nest one level only"},
		{"ack reaction with spaces", Config{Room: channels.RoomDefaults{AckReaction: "a b"}}, `ackReaction: "a b" is not a single emoji`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
				t.Fatalf("Validate = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func boolp(v bool) *bool { return &v }
