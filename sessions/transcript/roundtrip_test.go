package transcript

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestMessageRoundTrips: MessageRoundTrips holds exactly for the
// normalised messages that decoding their line gives back.
func TestMessageRoundTrips(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	text := func(s string) []sessions.Content { return []sessions.Content{{Type: sessions.BlockText, Text: s}} }
	tests := []struct {
		name string
		m    sessions.Message
		want bool
	}{
		{"user", sessions.UserText("hi <b>&</b> \u2028 é", now), true},
		{"input with records", sessions.Message{Role: sessions.RoleUser, Content: text("x"), RecordIDs: []string{"r1"}, HistorySeq: 7}, true},
		{"no content", sessions.Message{Role: sessions.RoleUser}, true},
		{"reply", sessions.Message{Role: sessions.RoleAssistant, Provider: "p", Model: "m", Usage: &sessions.Usage{Input: 1, Cost: sessions.Cost{Total: 0.1}},
			Content: []sessions.Content{{Type: sessions.BlockThinking, Thinking: "t", Signature: "s"}, {Type: sessions.BlockText, Text: "a"}}}, true},
		{"tool call", sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{
			{Type: sessions.BlockToolCall, ID: "c", Name: "x", Arguments: json.RawMessage(` { "a" : "<>" } `)}, {Type: sessions.BlockToolCall, ID: "d", Name: "y"}}}, true},
		{"tool result", sessions.Message{Role: sessions.RoleToolResult, ToolCallID: "c", ToolName: "x", IsError: true, Content: text("no")}, true},
		{"image", sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockImage, Data: "aGk=", MimeType: "image/png"}}}, true},
		{"custom role", sessions.Message{Role: "custom", Content: text("x")}, false},
		{"invalid UTF-8 text", sessions.UserText("bad \xff", now), false},
		{"invalid UTF-8 record", sessions.Message{Role: sessions.RoleUser, Content: text("x"), RecordIDs: []string{"\xfe"}}, false},
		{"invalid UTF-8 model", sessions.Message{Role: sessions.RoleAssistant, Model: "m\xff", Content: text("x")}, false},
		{"usage off an assistant", sessions.Message{Role: sessions.RoleUser, Usage: &sessions.Usage{Input: 1}, Content: text("x")}, false},
		{"isError off a tool result", sessions.Message{Role: sessions.RoleUser, IsError: true, Content: text("x")}, false},
		{"empty record list", sessions.Message{Role: sessions.RoleUser, RecordIDs: []string{}, Content: text("x")}, false},
		{"arguments off a tool call", sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "x", Arguments: json.RawMessage(`{ }`)}}}, false},
		{"timestamp past float64's integers", sessions.Message{Role: sessions.RoleUser, Content: text("x"), Timestamp: 1<<53 + 1}, false},
	}
	for _, tt := range tests {
		line, norm, err := EncodeMessage("e1", "e0", tt.m, now)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		n, err := ParseEntry(line, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		same := n.Msg != nil && reflect.DeepEqual(*n.Msg, norm)
		if got := MessageRoundTrips(&norm); got != tt.want || same != tt.want {
			t.Errorf("%s: MessageRoundTrips = %v, decoded line equal = %v, want %v\n line %s\n norm %+v\n  dec %+v", tt.name, got, same, tt.want, line, norm, n.Msg)
		}
	}
}

// TestFileAppendKeepsWhatReloadReads: a File keeps in memory, after its
// append, what reading its lines back gives, also for messages whose line
// does not decode to the message appended (pi's custom role, invalid
// UTF-8, fields the line leaves out): its context equals a reloaded
// File's.
func TestFileAppendKeepsWhatReloadReads(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	now := time.Now()
	msgs := []sessions.Message{
		sessions.UserText("bad \xff byte", now),
		{Role: "custom", Content: []sessions.Content{{Type: sessions.BlockText, Text: "a note"}}, Timestamp: now.UnixMilli()},
		{Role: sessions.RoleUser, IsError: true, Usage: &sessions.Usage{Input: 3}, Content: []sessions.Content{{Type: sessions.BlockText, Text: "odd"}}},
		{Role: sessions.RoleAssistant, Model: "m\xfe", Content: []sessions.Content{{Type: sessions.BlockText, Text: "ok"}}},
	}
	for _, m := range msgs {
		if _, err := tr.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := newTestTranscript(t, path, newMemLocker(), nil).Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("context after the appends differs from a reload's:\n got %+v\nwant %+v", got, want)
	}
}
