package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// tricky is text that needs escaping: quotes, backslashes, control
// characters, HTML, line separators, non-ASCII and invalid UTF-8.
const tricky = "a \"quoted\" \\path\\ <b>&amp;</b>\n\ttab\r\x00\x01\x1f\x7f é 日本 😀 \u2028\u2029 bad:\xff\xfe\xc3( end"

// requestCases are requests covering every message shape the provider
// sends, with the strings that need escaping.
func requestCases() map[string]llm.Request {
	img := sessions.Content{Type: sessions.BlockImage, MimeType: "image/png", Data: "iVBORw0KGgo="}
	history := []sessions.Message{
		user("hello"),
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "hi, how can I help?"}}},
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "what is this?"}, img}},
		{Role: sessions.RoleAssistant, Content: []sessions.Content{
			{Type: "thinking", Thinking: "hmm", Signature: "sig"},
			{Type: sessions.BlockText, Text: "let me look"},
			{Type: sessions.BlockToolCall, ID: "call_1", Name: "web_fetch", Arguments: json.RawMessage(`{"url": "https://x.test/?a=1&b=<2>"}`)},
			{Type: sessions.BlockToolCall, ID: "call_2", Name: "sessions_list", Arguments: nil},
		}},
		{Role: sessions.RoleToolResult, ToolCallID: "call_1", ToolName: "web_fetch", Content: []sessions.Content{
			{Type: sessions.BlockText, Text: "part one"}, {Type: sessions.BlockText, Text: ""}, {Type: sessions.BlockText, Text: "part two"}}},
		{Role: sessions.RoleToolResult, ToolCallID: "call_2", ToolName: "sessions_list"},
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "done"}}},
	}
	return map[string]llm.Request{
		"minimal":         {Model: "m", Messages: []sessions.Message{user("hi")}},
		"no messages":     {Model: "m"},
		"system only":     {Model: "m", System: "be brief"},
		"history":         {Model: "gpt-4o-mini", System: "You are a helpful assistant.", Messages: history},
		"empty user text": {Model: "m", Messages: []sessions.Message{user(""), {Role: sessions.RoleUser}}},
		"user text blocks": {Model: "m", Messages: []sessions.Message{{Role: sessions.RoleUser, Content: []sessions.Content{
			{Type: sessions.BlockText, Text: "one "}, {Type: sessions.BlockText, Text: "two"}, {Type: "unknown", Text: "skipped"}}}}},
		"images only": {Model: "m", Messages: []sessions.Message{{Role: sessions.RoleUser, Content: []sessions.Content{
			img, {Type: sessions.BlockImage, MimeType: "image/jpeg", Data: "/9j/4AAQ+abc/=="}}}}},
		"image with empty text": {Model: "m", Messages: []sessions.Message{{Role: sessions.RoleUser, Content: []sessions.Content{
			{Type: sessions.BlockText}, img, {Type: sessions.BlockText, Text: tricky}}}}},
		"assistant tool calls only": {Model: "m", Messages: []sessions.Message{{Role: sessions.RoleAssistant, Content: []sessions.Content{
			{Type: sessions.BlockToolCall, ID: "c1", Name: "a", Arguments: json.RawMessage(`{}`)},
			{Type: sessions.BlockToolCall, Arguments: json.RawMessage(`"not an object \u00e9 \n"`)},
			{Type: sessions.BlockToolCall, ID: "c3", Name: tricky, Arguments: json.RawMessage("{\"q\":\"" + "\\u2028 日本" + "\"}")},
		}}}},
		"empty assistant":   {Model: "m", Messages: []sessions.Message{{Role: sessions.RoleAssistant}}},
		"tool result empty": {Model: "m", Messages: []sessions.Message{{Role: sessions.RoleToolResult}}},
		"unknown role":      {Model: "m", Messages: []sessions.Message{{Role: "custom", Content: []sessions.Content{{Type: sessions.BlockText, Text: "x"}}}, user("y")}},
		"tricky strings": {Model: tricky, System: tricky, Messages: []sessions.Message{user(tricky),
			{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: tricky}}},
			{Role: sessions.RoleToolResult, ToolCallID: tricky, Content: []sessions.Content{{Type: sessions.BlockText, Text: tricky}}}}},
		"tools": {Model: "m", Messages: []sessions.Message{user("x")}, Tools: []llm.Tool{
			{Name: "sessions_list", Description: "List <sessions> & more", Parameters: json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"limit\": {\"type\": \"integer\"}}\n}")},
			{Name: "no_params"},
			{Name: "no_description", Parameters: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","description":"a \"quoted\" <tag>"}}}`)},
		}},
		"max tokens":      {Model: "m", Messages: []sessions.Message{user("x")}, MaxTokens: 512},
		"thinking low":    {Model: "o4-mini", Messages: []sessions.Message{user("x")}, Thinking: sessions.ThinkingLow},
		"thinking medium": {Model: "m", Messages: []sessions.Message{user("x")}, Thinking: sessions.ThinkingMedium},
		"thinking high":   {Model: "m", Messages: []sessions.Message{user("x")}, Thinking: sessions.ThinkingHigh},
		"thinking off":    {Model: "m", Messages: []sessions.Message{user("x")}, Thinking: sessions.ThinkingOff},
		"everything":      {Model: "m", System: "s", Messages: history, MaxTokens: 100, Thinking: sessions.ThinkingHigh, Tools: []llm.Tool{{Name: "t", Description: "d"}}},
	}
}

// TestEncodeRequestMatchesGoOpenAI: for every case the hand-written body
// decodes to the same JSON value as go-openai's encoding of the request
// the provider built for it before.
func TestEncodeRequestMatchesGoOpenAI(t *testing.T) {
	for name, req := range requestCases() {
		t.Run(name, func(t *testing.T) { checkSameJSON(t, req) })
	}
}

// FuzzEncodeRequest puts arbitrary text in every string the body carries.
func FuzzEncodeRequest(f *testing.F) {
	for _, s := range []string{"", "plain", tricky, "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 too big", "trailing \xe2\x82"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		req := llm.Request{Model: a, System: b, Messages: []sessions.Message{
			user(a),
			{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: b},
				{Type: sessions.BlockImage, MimeType: a, Data: b}}},
			{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: a},
				{Type: sessions.BlockToolCall, ID: b, Name: a, Arguments: json.RawMessage(b)}}},
			{Role: sessions.RoleToolResult, ToolCallID: a, Content: []sessions.Content{{Type: sessions.BlockText, Text: b}}},
		}, Tools: []llm.Tool{{Name: a, Description: b}}}
		checkSameJSON(t, req)
	})
}

func checkSameJSON(t *testing.T, req llm.Request) {
	t.Helper()
	old, err := json.Marshal(goOpenAIRequest(req))
	if err != nil {
		t.Fatalf("go-openai encoding: %v", err)
	}
	var buf bytes.Buffer
	if err := encodeRequest(&buf, req); err != nil {
		t.Fatalf("encodeRequest: %v", err)
	}
	var want, got any
	if err := json.Unmarshal(old, &want); err != nil {
		t.Fatalf("decoding go-openai's body: %v", err)
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("decoding our body: %v\n%s", err, buf.Bytes())
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("bodies differ\ngo-openai: %s\nours:      %s", old, buf.Bytes())
	}
	// With a session's memo, cold and then warm, the body is the same bytes.
	memo := &llm.Memo{}
	for _, what := range []string{"cold memo", "warm memo"} {
		checkMemoBytes(t, what, req, memo, buf.Bytes())
	}
}

// checkMemoBytes fails unless encoding req with memo gives want.
func checkMemoBytes(t *testing.T, what string, req llm.Request, memo *llm.Memo, want []byte) {
	t.Helper()
	req.Memo = memo
	var buf bytes.Buffer
	if err := encodeRequest(&buf, req); err != nil {
		t.Fatalf("%s: encodeRequest: %v", what, err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("%s: body differs from the one encoded afresh\nafresh: %s\nmemo:   %s", what, want, buf.Bytes())
	}
}

// TestEncodeRequestBadToolParameters: a tool whose schema is not JSON
// fails the request, as go-openai's encoding did, instead of sending a
// broken body.
func TestEncodeRequestBadToolParameters(t *testing.T) {
	req := llm.Request{Model: "m", Tools: []llm.Tool{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}}
	if _, err := json.Marshal(goOpenAIRequest(req)); err == nil {
		t.Fatal("go-openai encoded a broken schema")
	}
	var buf bytes.Buffer
	if err := encodeRequest(&buf, req); err == nil || !strings.Contains(err.Error(), `"broken"`) {
		t.Fatalf("err = %v, want one naming the tool", err)
	}
}

// history40 is a 40-message conversation of the size a chat keeps: user
// turns, answers, and a tool call with its result every few turns.
func history40() llm.Request {
	var msgs []sessions.Message
	for i := 0; len(msgs) < 40; i++ {
		msgs = append(msgs, user(fmt.Sprintf("message %d: could you look at this again and tell me what you think? %s", i, strings.Repeat("some words ", 10))))
		if i%4 == 3 {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "let me check"},
					{Type: sessions.BlockToolCall, ID: id, Name: "sessions_list", Arguments: json.RawMessage(`{"limit":5,"kinds":["main"]}`)}}},
				sessions.Message{Role: sessions.RoleToolResult, ToolCallID: id, ToolName: "sessions_list",
					Content: []sessions.Content{{Type: sessions.BlockText, Text: `[{"key":"agent:main:main","updated":"2026-11-30T03:00:00Z"}]`}}})
		}
		msgs = append(msgs, sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText,
			Text: fmt.Sprintf("Answer %d. %s\n\n- a point\n- \"another\" point", i, strings.Repeat("Here is what I think. ", 12))}}})
	}
	tools := []llm.Tool{
		{Name: "sessions_list", Description: "List sessions.", Parameters: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer"},"kinds":{"type":"array","items":{"type":"string"}}}}`)},
		{Name: "web_fetch", Description: "Fetch a URL and return its text.", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
	}
	return llm.Request{Model: "gpt-4o-mini", System: "You are a helpful assistant in a group chat. Be brief.", Messages: msgs[:40], Tools: tools}
}

func BenchmarkEncodeRequest(b *testing.B) {
	req := history40()
	b.ReportAllocs()
	for b.Loop() {
		body := newRequestBody()
		if err := encodeRequest(body.buf, req); err != nil {
			b.Fatal(err)
		}
		body.release()
	}
}

// BenchmarkEncodeRequestGoOpenAI is what go-openai did with the same
// request: build its request, json.Marshal it.
func BenchmarkEncodeRequestGoOpenAI(b *testing.B) {
	req := history40()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(goOpenAIRequest(req)); err != nil {
			b.Fatal(err)
		}
	}
}

// A tool description is cut to the API's 1024 characters (not bytes),
// marked with "…"; one of 1024 is kept whole.
func TestToolDescriptionCutToAPILimit(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string
	}{
		{strings.Repeat("é", 1024), strings.Repeat("é", 1024)},
		{strings.Repeat("é", 1025), strings.Repeat("é", 1023) + "…"},
		{strings.Repeat("a", 3000), strings.Repeat("a", 1023) + "…"},
		{"short", "short"},
	} {
		if got := toolDescription(tt.in); got != tt.want {
			t.Errorf("toolDescription(%d runes) = %d runes %q…, want %d runes", utf8.RuneCountInString(tt.in), utf8.RuneCountInString(got), got[:10], utf8.RuneCountInString(tt.want))
		}
	}
}
