package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// oddStrings exercise every escaping rule of encoding/json: quotes,
// backslashes, each control character, HTML characters (not escaped),
// invalid UTF-8, U+2028/U+2029, DEL and multi-byte runes.
var oddStrings = func() []string {
	s := []string{"", "plain", `q"uote`, `back\slash`, "<a href='x'>&amp;</a>", "\x7f", "é日本語🙂",
		"bad\xffutf8", "\xc3", "trunc\xe2\x80", "\u2028line\u2029para", "mixed \"\\\n\t\r\b\f\x00\x1f end"}
	var ctl strings.Builder
	for c := byte(0); c < 0x20; c++ {
		ctl.WriteByte(c)
	}
	return append(s, ctl.String())
}()

var oddFloats = []float64{0, 1, -1, 0.5, 1e-7, 1.5e-6, 1e-6, 1e20, 1e21, 1.23e25, 3.14159e-10, 0.000123, -2.5e-8, math.MaxFloat64, math.SmallestNonzeroFloat64}

func encodeCases() []sessions.Message {
	var out []sessions.Message
	for _, s := range oddStrings {
		out = append(out,
			sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: s}}, RecordIDs: []string{s, "r2"}, HistorySeq: 42},
			sessions.Message{Role: sessions.RoleAssistant, Provider: s, Model: s, StopReason: s, Content: []sessions.Content{
				{Type: sessions.BlockThinking, Thinking: s, Signature: s},
				{Type: sessions.BlockText, Text: s},
				{Type: sessions.BlockToolCall, ID: s, Name: s, Arguments: json.RawMessage(` { "a" : [1, 2 ,"` + strings.ReplaceAll(s, `"`, `'`) + `"] } `)},
			}},
			sessions.Message{Role: sessions.RoleToolResult, ToolCallID: s, ToolName: s, IsError: len(s)%2 == 0,
				Content: []sessions.Content{{Type: sessions.BlockText, Text: s}, {Type: sessions.BlockImage, Data: s, MimeType: s}}},
		)
	}
	for i, f := range oddFloats {
		out = append(out, sessions.Message{Role: sessions.RoleAssistant, Timestamp: int64(i) - 3, Content: []sessions.Content{{Type: sessions.BlockText, Text: "x"}},
			Usage: &sessions.Usage{Input: int64(i), Output: -int64(i), CacheRead: math.MaxInt64, CacheWrite: math.MinInt64, TotalTokens: 7,
				Cost: sessions.Cost{Input: f, Output: -f, CacheRead: f / 3, CacheWrite: f * 7, Total: f}}})
	}
	return append(out,
		sessions.Message{Role: sessions.RoleUser},                                                                            // nil content
		sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{}},                                             // empty content
		sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: "t"}}}, // empty arguments
		sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: "t", Arguments: json.RawMessage("  ")}}},
		sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: "custom", Text: "t", Arguments: json.RawMessage(`{"k":1}`)}}}, // arguments outside a tool call
		sessions.Message{Role: "other", IsError: true, Usage: &sessions.Usage{Input: 1}, Content: []sessions.Content{{Type: sessions.BlockText}}},
	)
}

// TestEncodeMessageMatchesReflection checks the hand-written encoder
// against the json.Encoder one it replaced: the same bytes for every block
// type, role and odd string or number, and lines that decode to the
// normalised message.
func TestEncodeMessageMatchesReflection(t *testing.T) {
	now := time.Date(2026, 11, 30, 3, 4, 5, 678_999_999, time.FixedZone("x", 3600))
	for i, m := range encodeCases() {
		for _, parent := range []string{"", "0badc0de"} {
			want, wantMsg, werr := refEncodeMessage("abcd1234", parent, m, now)
			got, gotMsg, gerr := EncodeMessage("abcd1234", parent, m, now)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("case %d: errors differ: reflection %v, hand-written %v", i, werr, gerr)
			}
			if werr != nil {
				continue
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d: encodings differ\nhand-written %s\nreflection   %s", i, got, want)
			}
			if !reflect.DeepEqual(gotMsg, wantMsg) {
				t.Fatalf("case %d: normalised messages differ: %+v vs %+v", i, gotMsg, wantMsg)
			}
			n, err := ParseEntry(got, 0)
			if err != nil {
				t.Fatalf("case %d: decode %s: %v", i, got, err)
			}
			if n == nil || n.ID != "abcd1234" || n.Parent != parent {
				t.Fatalf("case %d: decoded node %+v", i, n)
			}
			old, err := ParseEntry(want, 0)
			if err != nil || !reflect.DeepEqual(old, n) {
				t.Fatalf("case %d: the reference line decodes to %+v (%v), the new one to %+v", i, old, err, n)
			}
			if m.Role == "other" || bytes.Contains(got, []byte(`\ufffd`)) {
				continue // unknown roles decode to no message; invalid UTF-8 does not round-trip
			}
			if n.Msg == nil || !reflect.DeepEqual(*n.Msg, gotMsg) {
				t.Fatalf("case %d: decoded %+v, want %+v", i, n.Msg, gotMsg)
			}
		}
	}
}

// TestEncodeMessageErrorsLikeReflection: arguments that are not JSON and
// costs JSON cannot hold fail in both encoders.
func TestEncodeMessageErrorsLikeReflection(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	bad := []sessions.Message{
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: "t", Arguments: json.RawMessage(`{"a":`)}}},
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: "custom", Arguments: json.RawMessage(`nope`)}}},
		{Role: sessions.RoleAssistant, Usage: &sessions.Usage{Cost: sessions.Cost{Total: math.NaN()}}},
		{Role: sessions.RoleAssistant, Usage: &sessions.Usage{Cost: sessions.Cost{Input: math.Inf(1)}}},
	}
	for i, m := range bad {
		if _, _, err := refEncodeMessage("a", "", m, now); err == nil {
			t.Fatalf("case %d: the reference accepted it", i)
		}
		if line, _, err := EncodeMessage("a", "", m, now); err == nil {
			t.Fatalf("case %d: encoded %s, want an error", i, line)
		}
	}
}

func TestEncodeCompactionMatchesReflection(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, s := range oddStrings {
		for _, c := range []sessions.Compaction{
			{Summary: s, FirstKeptEntryID: s, TokensBefore: 123, TokensAfter: 45},
			{Summary: s, TokensBefore: -1},
		} {
			want, err := refEncodeCompaction("c0ffee00", s, c, now)
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodeCompaction("c0ffee00", s, c, now)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encodings differ\nhand-written %s\nreflection   %s", got, want)
			}
		}
	}
}

// FuzzEncodeMessage compares the two encoders on arbitrary text, ids and
// tool arguments.
func FuzzEncodeMessage(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, []byte(`{"a":1}`), 0.25)
	}
	f.Fuzz(func(t *testing.T, text, name string, args []byte, cost float64) {
		now := time.Unix(1_700_000_000, 123_456_789)
		for _, m := range []sessions.Message{
			{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, RecordIDs: []string{name}},
			{Role: sessions.RoleAssistant, Model: name, Usage: &sessions.Usage{Cost: sessions.Cost{Total: cost}},
				Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: text, Name: name, Arguments: args}}},
			{Role: sessions.RoleToolResult, ToolName: name, Content: []sessions.Content{{Type: text, Text: name, Arguments: args}}},
		} {
			want, _, werr := refEncodeMessage(name, text, m, now)
			got, _, gerr := EncodeMessage(name, text, m, now)
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("differ:\nhand-written %s (%v)\nreflection   %s (%v)", got, gerr, want, werr)
			}
		}
	})
}

func TestNewEntryID(t *testing.T) {
	for _, r := range []uint32{0, 1, 0xdeadbeef, math.MaxUint32, 0x0a0b0c0d} {
		if got, want := NewEntryID(r), fmt.Sprintf("%08x", r); got != want {
			t.Fatalf("NewEntryID(%#x) = %q, want %q", r, got, want)
		}
	}
}

// BenchmarkEncodeMessage compares the hand-written encoder with the
// reflection one it replaced, on a user message and an assistant reply.
func BenchmarkEncodeMessage(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	msgs := []sessions.Message{
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "a typical chat message of a few dozen characters, nothing more"}}, RecordIDs: []string{"tg-123456-789"}, HistorySeq: 12},
		{Role: sessions.RoleAssistant, Provider: "openai", Model: "gpt-4.1", Content: []sessions.Content{{Type: sessions.BlockText, Text: "a reply of a similar length, give or take some more words"}},
			Usage: &sessions.Usage{Input: 1234, Output: 56, TotalTokens: 1290, Cost: sessions.Cost{Input: 0.002468, Output: 0.000448, Total: 0.002916}}},
	}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			for _, m := range msgs {
				var err error
				if buf, _, err = appendMessageEntry(buf[:0], "abcd1234", "0badc0de", m, now); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("reflection", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, m := range msgs {
				if _, _, err := refEncodeMessage("abcd1234", "0badc0de", m, now); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
