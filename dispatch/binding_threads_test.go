package dispatch

import (
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
)

// Pin: a Discord thread and a Telegram forum topic are routed by their
// parent's bindings (the peer is the parent channel or group), the most
// specific binding wins whatever the order bindings are listed in, and
// the session key is the parent's plus :thread:/:topic: (SPEC §2).
func TestBindingsThreadsAndTopicsFollowTheirParent(t *testing.T) {
	r, err := routing.NewResolver(routing.Config{Bindings: []routing.Binding{
		{AgentID: "chan", Match: routing.Match{Channel: "discord", AccountID: "*"}},
		{AgentID: "guild", Match: routing.Match{Channel: "discord", AccountID: "*", GuildID: "g1"}},
		{AgentID: "ops", Match: routing.Match{Channel: "discord", AccountID: "*", Peer: &routing.PeerMatch{Kind: routing.Channel, ID: "c1"}}},
		{AgentID: "tgchan", Match: routing.Match{Channel: "telegram"}},
		{AgentID: "forum", Match: routing.Match{Channel: "telegram", Peer: &routing.PeerMatch{Kind: routing.Group, ID: "-100"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in         channels.Inbound
		agent, key string
	}{
		{channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: "c1", ThreadID: "t9"},
			ChatType: channels.Channel, GuildID: "g1", ParentChatID: "c1", SenderID: "u", CaseSensitive: true},
			"ops", "agent:ops:discord:channel:c1:thread:t9"},
		{channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: "c2", ThreadID: "t8"},
			ChatType: channels.Channel, GuildID: "g1", ParentChatID: "c2", SenderID: "u", CaseSensitive: true},
			"guild", "agent:guild:discord:channel:c2:thread:t8"},
		{channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "bot2", ChatID: "c3"},
			ChatType: channels.Channel, GuildID: "g2", SenderID: "u", CaseSensitive: true},
			"chan", "agent:chan:discord:channel:c3"},
		{channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-100", ThreadID: "1", IsTopic: true},
			ChatType: channels.Group, SenderID: "7"},
			"forum", "agent:forum:telegram:group:-100:topic:1"},
		{channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-200", ThreadID: "5", IsTopic: true},
			ChatType: channels.Group, SenderID: "7"},
			"tgchan", "agent:tgchan:telegram:group:-200:topic:5"},
	}
	for _, tt := range tests {
		route, err := Resolve(r, tt.in)
		if err != nil {
			t.Fatalf("%+v: %v", tt.in.Address, err)
		}
		if route.AgentID != tt.agent || route.Key.String() != tt.key {
			t.Errorf("%+v -> %s %s, want %s %s", tt.in.Address, route.AgentID, route.Key, tt.agent, tt.key)
		}
	}
}
