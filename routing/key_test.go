package routing

import (
	"errors"
	"strings"
	"testing"
)

func mustPeer(t *testing.T, agent, channel, account string, kind PeerKind, peer string) Key {
	t.Helper()
	k, err := PeerKey(agent, channel, account, kind, peer)
	if err != nil {
		t.Fatalf("PeerKey: %v", err)
	}
	return k
}

func TestKeyForms(t *testing.T) {
	thread := func(k Key, kind ThreadKind, id string) Key {
		t.Helper()
		k, err := k.WithThread(kind, id)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	main, _ := MainKey("Main", "main")
	sub, _ := SubagentKey("main", "0b7e3c2a-1f7e-4b1e-9f55-2d4f1c7a9e01")
	tests := []struct {
		name string
		key  Key
		want string
		rt   ResetType
	}{
		{"main", main, "agent:main:main", ResetDirect},
		{"per-peer dm", mustPeer(t, "main", "", "", Direct, "42"), "agent:main:direct:42", ResetDirect},
		{"per-channel-peer dm", mustPeer(t, "main", "telegram", "", Direct, "42"), "agent:main:telegram:direct:42", ResetDirect},
		{"per-account dm", mustPeer(t, "main", "telegram", "bot2", Direct, "42"), "agent:main:telegram:bot2:direct:42", ResetDirect},
		{"group", mustPeer(t, "main", "telegram", "", Group, "-100123"), "agent:main:telegram:group:-100123", ResetGroup},
		{"channel", mustPeer(t, "ops", "discord", "", Channel, "987"), "agent:ops:discord:channel:987", ResetGroup},
		{"topic", thread(mustPeer(t, "main", "telegram", "", Group, "-100123"), Topic, "77"), "agent:main:telegram:group:-100123:topic:77", ResetThread},
		{"thread", thread(mustPeer(t, "main", "discord", "", Channel, "987"), Thread, "555"), "agent:main:discord:channel:987:thread:555", ResetThread},
		{"subagent", sub, "agent:main:subagent:0b7e3c2a-1f7e-4b1e-9f55-2d4f1c7a9e01", ResetDirect},
		{"case-sensitive peer", mustPeer(t, "main", "web", "", Direct, "AbC"), "agent:main:web:direct:AbC", ResetDirect},
		{"hostile peer", mustPeer(t, "main", "web", "", Direct, "../a:b/c\\d\x00%"), "agent:main:web:direct:.%2E%2Fa%3Ab%2Fc%5Cd%00%25", ResetDirect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
			back, err := Parse(tt.want)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.want, err)
			}
			if back != tt.key {
				t.Fatalf("Parse(String()) = %#v, want %#v", back, tt.key)
			}
			if got := back.ResetType(); got != tt.rt {
				t.Errorf("ResetType = %s, want %s", got, tt.rt)
			}
		})
	}
}

func TestParseLegacyAndCase(t *testing.T) {
	k, err := Parse("AGENT:Main:Telegram:DM:42")
	if err != nil {
		t.Fatal(err)
	}
	if k.Kind != Direct || k.Channel != "telegram" || k.Agent != "main" || k.Peer != "42" {
		t.Fatalf("got %#v", k)
	}
	if got := k.String(); got != "agent:main:telegram:direct:42" {
		t.Fatalf("String() = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	bad := []struct{ in, want string }{
		{"", "want agent"},
		{"agent:main", "want agent"},
		{"session:main:main", "want agent"},
		{"agent::main", "component 2"},
		{"agent:main:telegram:group:", "component 5"},
		{"agent:main:direct", "needs an id"},
		{"agent:main:subagent:x:y", "extra components"},
		{"agent:main:telegram:group:1:thread", "want <peerId>"},
		{"agent:main:telegram:group:1:branch:2", "want thread or topic"},
		{"agent:main:telegram:bot:group:1", "only allowed in a direct key"},
		{"agent:ma in:main", "not a valid id"},
		{"agent:main:telegram:direct:a%zz", "bad escape"},
		{"agent:main:telegram:direct:..", "forbidden"},
		{"agent:main:telegram:direct:" + strings.Repeat("x", 300), "longer than"},
		{"agent:main:thread:1", "reserved word"},
	}
	for _, tt := range bad {
		_, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error", tt.in)
			continue
		}
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Parse(%q) error %v does not wrap ErrInvalidKey", tt.in, err)
		}
		if !strings.Contains(err.Error(), tt.want) && !(tt.want == "reserved word" && strings.Contains(err.Error(), "unexpected")) {
			t.Errorf("Parse(%q) = %v, want it to mention %q", tt.in, err, tt.want)
		}
	}
}

func TestConstructorErrors(t *testing.T) {
	if _, err := PeerKey("main", "telegram", "", Group, ""); !errors.Is(err, ErrEmptyID) {
		t.Errorf("empty peer: %v, want ErrEmptyID", err)
	}
	if _, err := PeerKey("", "telegram", "", Group, "1"); !errors.Is(err, ErrEmptyID) {
		t.Errorf("empty agent: %v, want ErrEmptyID", err)
	}
	if _, err := PeerKey("main", "", "", Group, "1"); err == nil {
		t.Error("group without channel accepted")
	}
	if _, err := PeerKey("main", "telegram", "acct", Group, "1"); err == nil {
		t.Error("account on a group key accepted")
	}
	if _, err := PeerKey("main", "direct", "", Direct, "1"); err == nil {
		t.Error("reserved channel name accepted")
	}
	if _, err := MainKey("main", "subagent"); err == nil {
		t.Error("reserved main key accepted")
	}
	if _, err := PeerKey("main", "telegram", "", "dm", "1"); err == nil {
		t.Error("kind dm accepted by the constructor")
	}
}

func TestNormalizeID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Main", "main"},
		{"My Agent!", "my-agent"},
		{"--x--", "x"},
		{"a..b", "a-b"},
		{"ünïcode", "n-code"},
		{strings.Repeat("a", 100), strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		got, err := NormalizeID(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeID(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "!!!", "..", "/"} {
		if got, err := NormalizeID(in); err == nil {
			t.Errorf("NormalizeID(%q) = %q, want error", in, got)
		}
	}
}

func TestDistinctPeersNeverCollide(t *testing.T) {
	peers := []string{"a", "A", "a.", "a..", "a%2E.", "a:b", "a%3Ab", "a/b", "a%2Fb", "..", ".", "%", "%25"}
	seen := map[string]string{}
	for _, p := range peers {
		k := mustPeer(t, "main", "web", "", Direct, p)
		s := k.String()
		if prev, ok := seen[s]; ok {
			t.Fatalf("peers %q and %q collide as %q", prev, p, s)
		}
		seen[s] = p
		if strings.Contains(s, "..") || strings.ContainsAny(s, "/\\\x00") {
			t.Fatalf("key %q holds a path-unsafe sequence", s)
		}
	}
}

// TestCanonicalKeys: keys that print the same are equal once canonical.
func TestCanonicalKeys(t *testing.T) {
	for _, pair := range [][2]Key{
		{{Agent: "main", Main: "main", Channel: "telegram", Kind: Direct, Peer: "1"}, {Agent: "main", Main: "main"}},
		{{Agent: "main", Subagent: "u", Channel: "web"}, {Agent: "main", Subagent: "u"}},
		{{Agent: "main", Channel: "telegram", Kind: Group, Peer: "-1", ThreadKind: "topic"}, {Agent: "main", Channel: "telegram", Kind: Group, Peer: "-1"}},
		// A thread of the main session is a session of its own.
		{{Agent: "main", Main: "main", Channel: "telegram", Kind: Direct, Peer: "1", ThreadKind: Thread, Thread: "42"}, {Agent: "main", Main: "main", ThreadKind: Thread, Thread: "42"}},
		{{Agent: "main", Main: "main", ThreadKind: Topic, Thread: "42"}, {Agent: "main", Main: "main", ThreadKind: Thread, Thread: "42"}},
	} {
		a, b := pair[0], pair[1]
		if a.String() != b.String() {
			t.Fatalf("%q and %q differ", a.String(), b.String())
		}
		if p, err := Parse(a.String()); err == nil && p.Canonical() != p {
			t.Errorf("Parse(%q) = %#v is not canonical: Canonical gives %#v", a.String(), p, p.Canonical())
		}
		if a.Canonical() != b.Canonical() {
			t.Errorf("%#v and %#v print %q but are not equal when canonical", a, b, a.String())
		}
		if p, err := Parse(a.String()); err != nil || p != a.Canonical() {
			t.Errorf("Parse(%q) = %#v, %v; want the canonical %#v", a.String(), p, err, a.Canonical())
		}
	}
}

// TestKeyStringAllocatesOnce: rendering a key is one allocation, the
// string itself, whatever its form; an id that needs no escaping is not
// copied on the way (issue 21: keys are rendered several times a message).
func TestKeyStringAllocatesOnce(t *testing.T) {
	keys := []Key{
		{Agent: "main", Channel: "telegram", Kind: Direct, Peer: "123456789"},
		{Agent: "main", Channel: "discord", Account: "work", Kind: Channel, Peer: "98765", ThreadKind: Topic, Thread: "77"},
		{Agent: "main", Main: "main", Thread: "42"},
		{Agent: "main", Subagent: "0b7c3a9e-1f2d-4c5b-8a6e-9d0f1e2a3b4c"},
		{Agent: "main", Channel: "web", Kind: Direct, Peer: "näme.with.dots"},
	}
	for _, k := range keys {
		var s string
		if n := testing.AllocsPerRun(100, func() { s = k.String() }); n != 1 {
			t.Errorf("%s: %v allocations, want 1", s, n)
		}
	}
	k := Key{Agent: "main", Channel: "web", Kind: Direct, Peer: "a:b..c%"}
	if got, want := k.String(), "agent:main:web:direct:a%3Ab.%2Ec%25"; got != want {
		t.Errorf("escaped peer: %s, want %s", got, want)
	}
}
