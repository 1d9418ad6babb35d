package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// searchFieldBodies are message bodies whose search columns the search
// trigger and searchFieldsOf must agree on (or searchFieldsOf leave to the
// trigger: defer).
var searchFieldBodies = []struct {
	body    string
	trigger bool
}{
	{body: `{"type":"message","message":{"role":"user","content":"plain string words","timestamp":1700000000000}}`},
	{body: `{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":""},{"type":"text"},{"type":"text","text":null},{"type":"text","text":"b c"}],"timestamp":"1700000000000"}}`},
	{body: `{"type":"message","message":{"role":"assistant","role":"user","content":[{"type":"text","text":"dup keys"}],"timestamp":1.7e12}}`},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"first"}]},"message":{"role":"assistant","content":[{"type":"text","text":"last wins"}]}}`},
	{body: `{"message":{"content":[1,"a",null,{"type":"text","text":null}],"role":"user"}}`},
	{body: `{"message":{"content":[{"type":"text","text":null},{"type":"text","text":"after null"}],"role":"assistant"}}`},
	{body: `{"message":{"role":"user","content":[]}}`},
	{body: `{"message":{"role":"user","content":{"type":"text","text":"object content"}}}`},
	{body: `{"message":{"role":"toolResult","content":[{"type":"text","text":"tool words"}],"timestamp":5}}`},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"esc \"q\" \\b \n new \/ line \u00e9 \u003c"}],"timestamp":-5}}`},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"half up"}],"timestamp":1700000000000.5}}`},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"half down"}],"timestamp":-1700000000000.5}}`},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"sub ms"}],"timestamp":1700000000123.4999}}`},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"null time"}],"timestamp":null}}`},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"  "}]}}`},
	{body: `{"message":{"role":true,"content":"role not a string"}}`},
	{body: `{"message":{"role":"User","content":"case matters"}}`},
	{body: `{"message":{"Role":"user","content":"key case matters"}}`},
	{body: `{"message":{"role":"user","content":[{"type":"Text","text":"type case"},{"TYPE":"text","text":"key case"},{"type":"text","text":"kept"}]}}`},
	{body: `{ "message" : { "role" : "user" , "content" : [ { "type" : "text" , "text" : "spaced out" } ] , "timestamp" : 1700000000001 } }`},
	{body: `{"message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"x","arguments":{"text":"not this"}},{"type":"text","text":"but this"}],"usage":{"input":1e3}}}`},
	{body: `{"message":{"role":"user","content":"emoji 😀 and ünïcode"}}`},
	{body: `{"message":[1,2]}`, trigger: true},
	{body: `{"message":"s"}`, trigger: true},
	{body: `{"other":1}`, trigger: true},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"nul\u0000here"}]}}`, trigger: true},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"pair \ud83d\ude00"}]}}`, trigger: true},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":5}]}}`, trigger: true},
	{body: `{"message":{"role":"user","content":[{"type":"text","text":"far"}],"timestamp":1e20}}`, trigger: true},
}

// TestSearchFieldsMatchTrigger: the search columns an append computes in
// Go are the ones the search trigger (migration 00009) writes for the
// same body, and the bodies left to the trigger are the unusual ones.
func TestSearchFieldsMatchTrigger(t *testing.T) {
	db, _ := openTest(t)
	ctx := context.Background()
	created := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	for i, c := range searchFieldBodies {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			f := searchFieldsOf(TypeMessage, []byte(c.body))
			if (f.role == nil) != c.trigger {
				t.Fatalf("left to the trigger: %v, want %v (%s)", f.role == nil, c.trigger, c.body)
			}
			if f.role == nil {
				return
			}
			var tRole *string
			var tSearch *string
			var tAt *time.Time
			err := db.pool.QueryRow(ctx, `INSERT INTO transcript_entries (session_id, seq, id, type, body, created_at)
				VALUES ('s', $1, $2, 'message', $3::json, $4) RETURNING search::text, search_role, search_at`,
				i, fmt.Sprint("e", i), c.body, created).Scan(&tSearch, &tRole, &tAt)
			if err != nil {
				t.Fatalf("trigger: %v", err)
			}
			var gSearch *string
			var gAt *time.Time
			err = db.pool.QueryRow(ctx, `SELECT to_tsvector('simple', $1::text)::text,
				CASE WHEN $1::text IS NOT NULL THEN COALESCE(to_timestamp($2::bigint / 1000.0), $3::timestamptz) END`,
				f.text, f.atMs, created).Scan(&gSearch, &gAt)
			if err != nil {
				t.Fatal(err)
			}
			wantRole := ""
			if tRole != nil {
				wantRole = *tRole
			}
			if *f.role != wantRole || fmt.Sprint(deref(gSearch)) != fmt.Sprint(deref(tSearch)) || fmt.Sprint(deref(gAt)) != fmt.Sprint(deref(tAt)) {
				t.Fatalf("%s\n go: role %q search %v at %v\ntrigger: role %q search %v at %v",
					c.body, *f.role, deref(gSearch), deref(gAt), wantRole, deref(tSearch), deref(tAt))
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSearchFieldsOfEncodedMessages: the daemon's own entries (every role
// and block kind transcript.EncodeMessage writes) are computed in Go, not
// left to the trigger, and appended through the chain they are found by
// the search like before.
func TestSearchFieldsOfEncodedMessages(t *testing.T) {
	now := time.Now()
	msgs := []sessions.Message{
		sessions.UserText("hello <b> & world", now),
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "answer"}}, Timestamp: now.UnixMilli()},
		{Role: sessions.RoleToolResult, ToolCallID: "c1", ToolName: "web_fetch",
			Content: []sessions.Content{{Type: sessions.BlockText, Text: "page"}}, Timestamp: now.UnixMilli()},
	}
	for i, m := range msgs {
		body, _, err := transcript.EncodeMessage(fmt.Sprint("id", i), "", m, now)
		if err != nil {
			t.Fatal(err)
		}
		f := searchFieldsOf(TypeMessage, body)
		if f.role == nil {
			t.Fatalf("message %d left to the trigger: %s", i, body)
		}
		searchable := m.Role != sessions.RoleToolResult
		if (f.text != nil) != searchable || (searchable && !strings.Contains(*f.text, m.Content[0].Text)) {
			t.Fatalf("message %d: text %v (%s)", i, deref(f.text), body)
		}
	}
	if f := searchFieldsOf(TypeSession, []byte(`{"type":"session"}`)); f.role != nil {
		t.Fatalf("a session header has search fields: %+v", f)
	}
}
