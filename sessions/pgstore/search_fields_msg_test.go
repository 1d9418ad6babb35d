package pgstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// sameSearchFields reports whether a and b are the same columns (values,
// not pointers).
func sameSearchFields(a, b searchFields) bool {
	return fmt.Sprint(deref(a.role), deref(a.text), deref(a.atMs)) == fmt.Sprint(deref(b.role), deref(b.text), deref(b.atMs)) &&
		(a.role == nil) == (b.role == nil) && (a.text == nil) == (b.text == nil) && (a.atMs == nil) == (b.atMs == nil)
}

// checkSearchFieldsOfMessage encodes m as an append does and fails t when
// the columns computed from the message differ from those decoded from
// the entry.
func checkSearchFieldsOfMessage(t *testing.T, m sessions.Message) {
	t.Helper()
	body, norm, err := transcript.EncodeMessage("e1", "", m, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	if err != nil {
		return // not appendable: never reaches the columns
	}
	got, want := searchFieldsOfMessage(&norm, body), searchFieldsOf(TypeMessage, body)
	if !sameSearchFields(got, want) {
		t.Fatalf("%s\nfrom the message: role %v text %q at %v\n  from the entry: role %v text %q at %v",
			body, deref(got.role), deref(got.text), deref(got.atMs), deref(want.role), deref(want.text), deref(want.atMs))
	}
}

// TestSearchFieldsOfMessageMatchDecoding: for the messages an append
// writes, the search columns computed from the message are those
// searchFieldsOf decodes from the entry (which TestSearchFieldsMatchTrigger
// holds to the trigger), including the ones left to the trigger.
func TestSearchFieldsOfMessageMatchDecoding(t *testing.T) {
	ts := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC).UnixMilli()
	text := func(s ...string) []sessions.Content {
		out := make([]sessions.Content, len(s))
		for i, x := range s {
			out[i] = sessions.Content{Type: sessions.BlockText, Text: x}
		}
		return out
	}
	msgs := []sessions.Message{
		sessions.UserText("hello <b> & world", time.UnixMilli(ts)),
		{Role: sessions.RoleAssistant, Content: text("one", "two", "three"), Timestamp: ts},
		{Role: sessions.RoleAssistant, Content: text("", "after an empty one"), Timestamp: ts},
		{Role: sessions.RoleAssistant, Content: text("before", "", "after"), Timestamp: ts},
		{Role: sessions.RoleUser, Content: text("", ""), Timestamp: ts},
		{Role: sessions.RoleUser, Content: text("  "), Timestamp: ts},
		{Role: sessions.RoleUser, Content: nil, Timestamp: ts},
		{Role: sessions.RoleUser, Content: []sessions.Content{}, Timestamp: ts},
		{Role: sessions.RoleUser, Timestamp: 0}, // normalised to now
		{Role: sessions.RoleAssistant, Content: []sessions.Content{
			{Type: sessions.BlockThinking, Thinking: "hmm"},
			{Type: sessions.BlockToolCall, ID: "c1", Name: "x", Arguments: json.RawMessage(`{"text":"not this"}`)},
			{Type: sessions.BlockText, Text: "but this"}}, Timestamp: ts},
		{Role: sessions.RoleAssistant, Content: []sessions.Content{
			{Type: sessions.BlockToolCall, ID: "c1", Name: "x", Arguments: json.RawMessage(`{"q":"nul\u0000"}`)},
			{Type: sessions.BlockText, Text: "args hold a NUL escape"}}, Timestamp: ts},
		{Role: sessions.RoleAssistant, Content: []sessions.Content{
			{Type: sessions.BlockToolCall, ID: "c1", Name: "x", Arguments: json.RawMessage(`{"q":"\ud83d\ude00"}`)},
			{Type: sessions.BlockText, Text: "args hold a surrogate pair"}}, Timestamp: ts},
		{Role: sessions.RoleToolResult, ToolCallID: "c1", ToolName: "web_fetch", Content: text("page"), Timestamp: ts},
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockImage, Data: "aGk=", MimeType: "image/png"}}, Timestamp: ts},
		{Role: sessions.RoleUser, Content: text("nul\x00inside"), Timestamp: ts},
		{Role: sessions.RoleUser, Content: text("bad \xff utf-8", "and more"), Timestamp: ts},
		{Role: "us\xffer", Content: text("bad role"), Timestamp: ts},
		{Role: sessions.RoleUser, Content: text("emoji 😀, ünïcode, \u2028 separators, \"quotes\" \\ / \t tabs"), Timestamp: ts},
		{Role: sessions.RoleUser, Content: text("negative time"), Timestamp: -5},
		{Role: sessions.RoleUser, Content: text("far"), Timestamp: maxSearchMillis},
		{Role: sessions.RoleUser, Content: text("far back"), Timestamp: -maxSearchMillis},
		{Role: sessions.RoleUser, Content: text("just in"), Timestamp: maxSearchMillis - 1},
		{Role: "User", Content: text("case matters"), Timestamp: ts},
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: "Text", Text: "type case"}, {Type: sessions.BlockText, Text: "kept"}}, Timestamp: ts},
	}
	for i, m := range msgs {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkSearchFieldsOfMessage(t, m) })
	}
}

// FuzzSearchFieldsOfMessage: the same over arbitrary roles, texts, block
// types and timestamps.
func FuzzSearchFieldsOfMessage(f *testing.F) {
	f.Add("user", "text", "a", "text", "b", int64(1764493200000))
	f.Add("assistant", "text", "", "text", "after", int64(5))
	f.Add("user", "image", "x", "text", "nul\x00", int64(-1))
	f.Add("toolResult", "text", "\xff", "thinking", "t", int64(1e15))
	f.Fuzz(func(t *testing.T, role, typ1, text1, typ2, text2 string, ts int64) {
		checkSearchFieldsOfMessage(t, sessions.Message{Role: role, Timestamp: ts,
			Content: []sessions.Content{{Type: typ1, Text: text1}, {Type: typ2, Text: text2}}})
	})
}

// BenchmarkSearchFields: the search columns of a reply's entry, decoded
// from the entry (searchFieldsOf) against computed from the message.
func BenchmarkSearchFields(b *testing.B) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	m := sessions.Message{Role: sessions.RoleAssistant, Timestamp: now.UnixMilli(), Provider: "openai", Model: "gpt",
		Content:    []sessions.Content{{Type: sessions.BlockText, Text: "Here is a reply of a few sentences, the usual size of a chat answer. It says what was asked for and a little more."}},
		Usage:      &sessions.Usage{Input: 1200, Output: 40, TotalTokens: 1240},
		StopReason: "stop"}
	body, norm, err := transcript.EncodeMessage("e1", "", m, now)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("entry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			searchFieldsOf(TypeMessage, body)
		}
	})
	b.Run("message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			searchFieldsOfMessage(&norm, body)
		}
	})
}
