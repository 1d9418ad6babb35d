package routing

import (
	"errors"
	"testing"
)

// TestDmScopeMainKeepsThread: with dmScope main a DM thread or topic is
// kept as agent:main:main:thread:<id> (SPEC §2, seed 002), and the key
// round-trips through Parse.
func TestDmScopeMainKeepsThread(t *testing.T) {
	r, err := NewResolver(Config{DMScope: ScopeMain})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		in   Input
		want string
	}{
		"dm thread":  {Input{Channel: "discord", Kind: Direct, PeerID: "9", ThreadID: "T1"}, "agent:main:main:thread:T1"},
		"dm topic":   {Input{Channel: "telegram", Kind: Direct, PeerID: "9", ThreadKind: Topic, ThreadID: "5"}, "agent:main:main:thread:5"},
		"plain dm":   {Input{Channel: "telegram", Kind: Direct, PeerID: "9"}, "agent:main:main"},
		"group kept": {Input{Channel: "telegram", Kind: Group, PeerID: "-1", ThreadKind: Topic, ThreadID: "5"}, "agent:main:telegram:group:-1:topic:5"},
	} {
		got, err := r.Resolve(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Key.String() != tc.want {
			t.Errorf("%s: %s, want %s", name, got.Key, tc.want)
		}
		if p, err := Parse(tc.want); err != nil || p != got.Key {
			t.Errorf("%s: Parse(%s) = %+v, %v; want %+v", name, tc.want, p, err, got.Key)
		}
		if got.ParentKey != got.Key.Parent() {
			t.Errorf("%s: parent %s, want %s", name, got.ParentKey, got.Key.Parent())
		}
	}
	k, _ := Parse("agent:main:main:thread:T1")
	if k.ResetType() != ResetThread || k.Parent().String() != "agent:main:main" || !k.IsMain() {
		t.Errorf("thread of main: reset type %s, parent %s", k.ResetType(), k.Parent())
	}
	main, _ := MainKey("main", "main")
	if _, err := main.WithThread(Topic, "5"); err == nil {
		t.Error("a topic suffix on a main key was accepted (it is :thread:)")
	}
	for _, bad := range []string{"agent:main:main:topic:5", "agent:main:main:thread:", "agent:main:main:thread:a/b"} {
		if _, err := Parse(bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

// TestDmScopeGlobal: dmScope global puts DMs and groups of every channel in
// the agent's main session; threads keep their own below it.
func TestDmScopeGlobal(t *testing.T) {
	r, err := NewResolver(Config{DMScope: ScopeGlobal, MainKey: "everything"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		in   Input
		want string
	}{
		"telegram dm":    {Input{Channel: "telegram", Kind: Direct, PeerID: "9"}, "agent:main:everything"},
		"discord group":  {Input{Channel: "discord", Kind: Channel, PeerID: "55"}, "agent:main:everything"},
		"telegram group": {Input{Channel: "telegram", Kind: Group, PeerID: "-1"}, "agent:main:everything"},
		"thread":         {Input{Channel: "discord", Kind: Channel, PeerID: "55", ThreadID: "66"}, "agent:main:everything:thread:66"},
		"topic":          {Input{Channel: "telegram", Kind: Group, PeerID: "-1", ThreadKind: Topic, ThreadID: "3"}, "agent:main:everything:thread:3"},
	} {
		got, err := r.Resolve(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Key.String() != tc.want {
			t.Errorf("%s: %s, want %s", name, got.Key, tc.want)
		}
	}
	if err := (Config{DMScope: "everyone"}).Validate(); err == nil {
		t.Error("dmScope everyone accepted")
	}
}
