package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// marshal is encoding/json's string with HTML escaping off.
func marshal(t testing.TB, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

var samples = []string{"", "plain", `quote " and \ backslash`, "line\nbreak\r\ttab\b\f", "\x00\x01\x1f\x7f",
	"<b>&amp;</b>", "héllo wörld 你好", "bad \xff utf-8 \xc3", "sep \u2028 and \u2029", "emoji 😀"}

// marshalHTML is json.Marshal's string (HTML escaping on).
func marshalHTML(t testing.TB, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := AppendString([]byte("x"), s), append([]byte("x"), marshal(t, s)...); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got, want := AppendStringHTML([]byte("x"), s), append([]byte("x"), marshalHTML(t, s)...); !bytes.Equal(got, want) {
			t.Errorf("AppendStringHTML(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendString(nil, s), marshal(t, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got, want := AppendStringHTML(nil, s), marshalHTML(t, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendStringHTML(%q) = %s, want %s", s, got, want)
		}
	})
}
