package routing

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// round-trips through String and never holds a path-unsafe sequence.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"agent:main:main", "agent:main:direct:42", "agent:main:telegram:direct:42",
		"agent:main:telegram:bot2:direct:42", "agent:main:telegram:group:-100:topic:7",
		"agent:main:discord:channel:1:thread:2", "agent:main:main:thread:T1", "agent:main:subagent:abc", "agent:x:web:dm:%2F",
		"agent:a:b:c:d:e:f:g", "", ":::", "agent:main:telegram:direct:a%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := Parse(s)
		if err != nil {
			return
		}
		out := k.String()
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but Parse(String()=%q) failed: %v", s, out, err)
		}
		if back != k {
			t.Fatalf("round trip of %q: %#v != %#v", s, back, k)
		}
		if strings.Contains(out, "..") || strings.ContainsAny(out, "/\\\x00") {
			t.Fatalf("String() = %q holds a path-unsafe sequence", out)
		}
	})
}

// FuzzPeerKey checks that any peer id builds a key that round-trips.
func FuzzPeerKey(f *testing.F) {
	for _, s := range []string{"42", "../..", "a:b", "%", "ü", "\x00", "\xff\xfe", "é\xc3"} {
		f.Add(s, "thread")
	}
	f.Fuzz(func(t *testing.T, peer, thread string) {
		k, err := PeerKey("main", "telegram", "", Group, peer)
		if err != nil {
			return
		}
		if kk, err := k.WithThread(Thread, thread); err == nil {
			k = kk
		}
		back, err := Parse(k.String())
		if err != nil || back != k {
			t.Fatalf("PeerKey(%q) round trip: %v %#v != %#v", peer, err, back, k)
		}
		if !utf8.ValidString(k.String()) {
			t.Fatalf("PeerKey(%q).String() = %q is not valid UTF-8", peer, k.String())
		}
	})
}
