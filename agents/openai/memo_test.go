package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// afresh is req's body encoded without a memo.
func afresh(t *testing.T, req llm.Request) []byte {
	t.Helper()
	req.Memo = nil
	var buf bytes.Buffer
	if err := encodeRequest(&buf, req); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMemoFollowsTheSession encodes one session's requests in turn with
// one memo, each change one that a memo keyed by less than everything
// the encoding reads would miss, and compares each body with the one
// encoded afresh.
func TestMemoFollowsTheSession(t *testing.T) {
	memo := &llm.Memo{}
	var msgs []sessions.Message
	step := func(what string, system string) {
		t.Helper()
		req := llm.Request{Model: "m", System: system, Messages: msgs}
		checkMemoBytes(t, what, req, memo, afresh(t, req))
	}
	for i := range 6 {
		msgs = append(msgs, user(fmt.Sprintf("question %d %s", i, tricky)), sessions.Message{Role: sessions.RoleAssistant,
			Content: []sessions.Content{{Type: sessions.BlockText, Text: fmt.Sprintf("answer %d", i)}}})
		step(fmt.Sprintf("turn %d", i), "sys")
	}
	step("no system prompt", "")
	step("system prompt again", "sys")
	// A merge: the last user message's blocks replaced by as many others.
	msgs = append(msgs, user("short"))
	step("user message", "sys")
	msgs[len(msgs)-1] = user("short\n\n" + strings.Repeat("longer ", 20))
	step("merged user message", "sys")
	// The same blocks under another role, another tool call id.
	blocks := []sessions.Content{{Type: sessions.BlockText, Text: "result"}}
	msgs = append(msgs, sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{
		{Type: sessions.BlockToolCall, ID: "c1", Name: "t", Arguments: json.RawMessage(`{"a":1}`)}}},
		sessions.Message{Role: sessions.RoleToolResult, ToolCallID: "c1", Content: blocks})
	step("tool result", "sys")
	msgs[len(msgs)-1].ToolCallID = "c2"
	step("other tool call id", "sys")
	msgs[len(msgs)-1].Role = sessions.RoleUser
	step("other role", "sys")
	msgs[len(msgs)-1].Role = "custom"
	step("role not sent", "sys")
	// A compaction: a summary first, the rest kept.
	msgs = append([]sessions.Message{user("<summary>earlier</summary>")}, msgs[6:]...)
	step("compaction", "sys")
	// A role that is not sent first, with and without a system prompt.
	msgs = append([]sessions.Message{{Role: "custom", Content: blocks}}, msgs...)
	step("unsent first, no system", "")
	step("unsent first, system", "sys")
	msgs = msgs[:3]
	step("shorter", "")
	msgs = nil
	step("empty", "sys")
	step("empty, no system", "")
}

// TestMemoDropsLargeHistories: an encoding past maxEncodedMemo is not
// kept, and a memo holding another provider's value is replaced.
func TestMemoDropsLargeHistories(t *testing.T) {
	memo := &llm.Memo{Value: "another provider's"}
	req := llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}
	checkMemoBytes(t, "foreign value", req, memo, afresh(t, req))
	if _, ok := memo.Value.(*encodedMessages); !ok || memo.Size == 0 {
		t.Fatalf("memo holds %T (size %d), want the encoding", memo.Value, memo.Size)
	}
	req.Messages = append(req.Messages, user(strings.Repeat("y", maxEncodedMemo)))
	checkMemoBytes(t, "large", req, memo, afresh(t, req))
	if memo.Value != nil || memo.Size != 0 {
		t.Fatalf("memo holds %T (size %d) after a %d-byte history", memo.Value, memo.Size, maxEncodedMemo)
	}
}

// BenchmarkEncodeHistory encodes the request of a session of history
// messages (history40's shapes) afresh, and with the memo of the call
// before, which had two messages fewer: what each model call pays (the
// memo op is two calls: the one before, then this one).
func BenchmarkEncodeHistory(b *testing.B) {
	for _, n := range []int{150, 500} {
		base := history40()
		var msgs []sessions.Message
		for len(msgs) < n {
			msgs = append(msgs, base.Messages...)
		}
		msgs = msgs[:n]
		req := base
		req.Messages = msgs
		b.Run(fmt.Sprintf("history=%d/afresh", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				body := newRequestBody()
				if err := encodeRequest(body.buf, req); err != nil {
					b.Fatal(err)
				}
				body.release()
			}
		})
		b.Run(fmt.Sprintf("history=%d/memo", n), func(b *testing.B) {
			memo := &llm.Memo{}
			prev := req
			prev.Messages, prev.Memo = msgs[:n-2], memo
			cur := req
			cur.Memo = memo
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range []llm.Request{prev, cur} { // the memo ends one turn behind
					body := newRequestBody()
					if err := encodeRequest(body.buf, r); err != nil {
						b.Fatal(err)
					}
					body.release()
				}
			}
		})
	}
}

// TestMemoTools: a session's tools, rebuilt each turn, are written as
// afresh whether equal to the last ones (new slices, the same bytes) or
// changed in a parameter byte, a description, a name, their number; a
// tool whose parameters are broken fails as afresh and is not kept.
func TestMemoTools(t *testing.T) {
	memo := &llm.Memo{}
	tools := func(params, desc string) []llm.Tool {
		return []llm.Tool{
			{Name: "sessions_list", Description: desc, Parameters: json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"limit\": {\"type\": \"integer\"}}\n}")},
			{Name: "t2", Parameters: json.RawMessage(params)},
			{Name: "none"},
		}
	}
	msgs := []sessions.Message{user("hi")}
	step := func(what string, ts []llm.Tool) {
		t.Helper()
		req := llm.Request{Model: "m", Messages: msgs, Tools: ts}
		checkMemoBytes(t, what, req, memo, afresh(t, req))
	}
	step("first", tools(`{"a": 1}`, "List <sessions>"))
	step("rebuilt", tools(`{"a": 1}`, "List <sessions>"))
	step("parameter byte", tools(`{"a": 2}`, "List <sessions>"))
	step("description", tools(`{"a": 2}`, "List sessions"))
	ts := tools(`{"a": 2}`, "List sessions")
	ts[2].Name = "other"
	step("name", ts)
	step("fewer", ts[:1])
	step("none", nil)
	step("again", tools(`{"a": 2}`, "List sessions"))
	var buf bytes.Buffer
	bad := llm.Request{Model: "m", Messages: msgs, Tools: tools(`{"a":`, "x"), Memo: memo}
	if err := encodeRequest(&buf, bad); err == nil {
		t.Fatal("broken parameters encoded")
	}
	step("after broken", tools(`{"a": 2}`, "List sessions"))
	// The memo's copy is its own: changing the caller's parameters in
	// place does not change what it compares with.
	ts = tools(`{"a": 3}`, "d")
	step("before change in place", ts)
	ts[1].Parameters[6] = '4'
	step("changed in place", ts)
}
