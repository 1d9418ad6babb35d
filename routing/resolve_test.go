package routing

import (
	"strings"
	"testing"
)

func TestResolveScopes(t *testing.T) {
	in := Input{Channel: "telegram", AccountID: "bot2", Kind: Direct, PeerID: "42"}
	tests := []struct {
		scope DMScope
		want  string
	}{
		{ScopeMain, "agent:main:main"},
		{ScopePerPeer, "agent:main:direct:42"},
		{ScopePerChannelPeer, "agent:main:telegram:direct:42"},
		{ScopePerAccountChannelPeer, "agent:main:telegram:bot2:direct:42"},
		{"", "agent:main:telegram:direct:42"},
	}
	for _, tt := range tests {
		r, err := NewResolver(Config{DMScope: tt.scope})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Resolve(in)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key.String() != tt.want {
			t.Errorf("scope %q: %s, want %s", tt.scope, got.Key, tt.want)
		}
	}
}

func TestResolveGroupsThreadsAndLinks(t *testing.T) {
	r, err := NewResolver(Config{
		IdentityLinks: map[string][]string{"alice": {"telegram:123", "discord:987"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"group no account", Input{Channel: "telegram", AccountID: "bot2", Kind: Group, PeerID: "-100"}, "agent:main:telegram:group:-100"},
		{"topic", Input{Channel: "telegram", Kind: Group, PeerID: "-100", ThreadKind: Topic, ThreadID: "7"}, "agent:main:telegram:group:-100:topic:7"},
		{"discord thread", Input{Channel: "discord", Kind: Channel, PeerID: "55", ThreadID: "66"}, "agent:main:discord:channel:55:thread:66"},
		{"linked telegram", Input{Channel: "telegram", Kind: Direct, PeerID: "123"}, "agent:main:telegram:direct:alice"},
		{"linked discord", Input{Channel: "discord", Kind: Direct, PeerID: "987"}, "agent:main:discord:direct:alice"},
		{"lowercased", Input{Channel: "web", Kind: Direct, PeerID: "BoB"}, "agent:main:web:direct:bob"},
		{"case kept", Input{Channel: "web", Kind: Direct, PeerID: "BoB", CaseSensitive: true}, "agent:main:web:direct:BoB"},
	}
	for _, tt := range tests {
		got, err := r.Resolve(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.Key.String() != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got.Key, tt.want)
		}
		if got.ParentKey != got.Key.Parent() {
			t.Errorf("%s: parent %s, want %s", tt.name, got.ParentKey, got.Key.Parent())
		}
	}
	for _, in := range []Input{{Channel: "telegram", Kind: Group}, {Kind: Group, PeerID: "1"}, {Channel: "x", Kind: "dm", PeerID: "1"}} {
		if _, err := r.Resolve(in); err == nil {
			t.Errorf("Resolve(%+v) succeeded", in)
		}
	}
}

func TestBindingsMostSpecificWins(t *testing.T) {
	r, err := NewResolver(Config{DefaultAgent: "main", Bindings: []Binding{
		{AgentID: "chan", Match: Match{Channel: "telegram"}},
		{AgentID: "acct", Match: Match{Channel: "telegram", AccountID: "bot2"}},
		{AgentID: "guild", Match: Match{Channel: "discord", GuildID: "g1"}},
		{AgentID: "peer", Match: Match{Channel: "telegram", AccountID: "*", Peer: &PeerMatch{Kind: Group, ID: "-100"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   Input
		want string
	}{
		{Input{Channel: "telegram", AccountID: "bot2", Kind: Group, PeerID: "-100"}, "peer"},
		{Input{Channel: "telegram", AccountID: "bot2", Kind: Group, PeerID: "-200"}, "acct"},
		{Input{Channel: "telegram", AccountID: "bot1", Kind: Direct, PeerID: "1"}, "chan"},
		{Input{Channel: "discord", GuildID: "g1", Kind: Channel, PeerID: "5"}, "guild"},
		{Input{Channel: "discord", GuildID: "g2", Kind: Channel, PeerID: "5"}, "main"},
	}
	for _, tt := range tests {
		got, err := r.Resolve(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got.AgentID != tt.want || !strings.HasPrefix(got.Key.String(), "agent:"+tt.want+":") {
			t.Errorf("%+v -> %s (%s), want agent %s", tt.in, got.AgentID, got.Key, tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{DMScope: "everyone"},
		{MainKey: "!!!"},
		{IdentityLinks: map[string][]string{"a": {"nocolon"}}},
		{Bindings: []Binding{{AgentID: "Bad Agent!"}}},
		{Bindings: []Binding{{AgentID: "a", Match: Match{Peer: &PeerMatch{Kind: "dm", ID: "1"}}}}},
	}
	for i, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("config %d accepted: %+v", i, c)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	r, _ := NewResolver(Config{})
	in := Input{Channel: "telegram", Kind: Group, PeerID: "-100123", ThreadKind: Topic, ThreadID: "7"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Resolve(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("agent:main:telegram:group:-100123:topic:7"); err != nil {
			b.Fatal(err)
		}
	}
}
