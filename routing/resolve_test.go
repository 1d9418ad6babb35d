package routing

import (
	"errors"
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
		{Input{Channel: "telegram", AccountID: "bot1", Kind: Direct, PeerID: "1"}, "main"}, // no accountId: default account only
		{Input{Channel: "telegram", AccountID: "default", Kind: Direct, PeerID: "1"}, "chan"},
		{Input{Channel: "telegram", Kind: Direct, PeerID: "1"}, "chan"},
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
		{IdentityLinks: map[string][]string{"a": {":555"}}},
		{IdentityLinks: map[string][]string{"a": {"telegram:  "}}},
		{Bindings: []Binding{{AgentID: "a", Match: Match{Peer: &PeerMatch{Kind: Direct, ID: "   "}}}}},
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

// TestRoutingEdgeCases settles the edge cases checked against the
// reference system's vectors (SPEC §2).
func TestRoutingEdgeCases(t *testing.T) {
	r, err := NewResolver(Config{DefaultAgent: "main",
		IdentityLinks: map[string][]string{"ann": {"telegram:111", "555"}},
		Bindings: []Binding{
			{AgentID: "ops", Match: Match{Channel: "Telegram", AccountID: " Bot2 "}},
			{AgentID: "dms", Match: Match{Channel: "discord", AccountID: "*", Peer: &PeerMatch{Kind: Direct, ID: "*"}}},
			{AgentID: "vip", Match: Match{Channel: "discord", AccountID: "*", Peer: &PeerMatch{Kind: Direct, ID: " 42 "}}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	key := func(in Input) Route {
		t.Helper()
		rt, err := r.Resolve(in)
		if err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		return rt
	}
	// Ids are trimmed; a blank id is an error, not a key.
	if a, b := key(Input{Channel: "telegram", Kind: Group, PeerID: " -100 "}), key(Input{Channel: "telegram", Kind: Group, PeerID: "-100"}); a.Key != b.Key {
		t.Errorf("padded id gave %s, want %s", a.Key, b.Key)
	}
	if _, err := r.Resolve(Input{Channel: "telegram", Kind: Direct, PeerID: "   "}); !errors.Is(err, ErrEmptyID) {
		t.Errorf("blank peer id: %v, want ErrEmptyID", err)
	}
	// Binding account ids are canonicalised.
	if got := key(Input{Channel: "telegram", AccountID: "bot2", Kind: Direct, PeerID: "1"}); got.AgentID != "ops" {
		t.Errorf("account bot2 -> %s, want ops", got.AgentID)
	}
	// Wildcard peers match every peer of the kind, below an exact peer.
	if got := key(Input{Channel: "discord", AccountID: "x", Kind: Direct, PeerID: "7"}); got.AgentID != "dms" {
		t.Errorf("discord DM -> %s, want dms", got.AgentID)
	}
	if got := key(Input{Channel: "discord", AccountID: "x", Kind: Direct, PeerID: "42"}); got.AgentID != "vip" {
		t.Errorf("discord DM 42 -> %s, want vip", got.AgentID)
	}
	if got := key(Input{Channel: "discord", AccountID: "x", Kind: Channel, PeerID: "7"}); got.AgentID != "main" {
		t.Errorf("discord channel -> %s, want main (the wildcard is for DMs)", got.AgentID)
	}
	// Identity links: channel-qualified and bare ids.
	for _, in := range []Input{{Channel: "telegram", Kind: Direct, PeerID: "111"}, {Channel: "web", Kind: Direct, PeerID: "555"}} {
		if got := key(in); got.Key.String() != "agent:main:"+in.Channel+":direct:ann" {
			t.Errorf("%+v -> %s, want the linked identity ann", in, got.Key)
		}
	}
	// A thread in a private chat (Telegram DM topics) and a Discord thread:
	// their own key with :thread:, the route naming the parent.
	dmThread := key(Input{Channel: "telegram", Kind: Direct, PeerID: "9", ThreadKind: Thread, ThreadID: "77"})
	if dmThread.Key.String() != "agent:main:telegram:direct:9:thread:77" || dmThread.ParentKey.String() != "agent:main:telegram:direct:9" {
		t.Errorf("telegram DM thread -> %s (parent %s)", dmThread.Key, dmThread.ParentKey)
	}
	dThread := key(Input{Channel: "discord", AccountID: "x", Kind: Channel, PeerID: "300", ThreadKind: Thread, ThreadID: "301"})
	if dThread.Key.String() != "agent:main:discord:channel:300:thread:301" || dThread.ParentKey.String() != "agent:main:discord:channel:300" {
		t.Errorf("discord thread -> %s (parent %s)", dThread.Key, dThread.ParentKey)
	}
}
