package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestSessionsShowContextHasPromptAndTools: --context shows what a turn
// sends besides the messages: the agent's and the room's system prompt
// and the tools the agent's policy offers.
func TestSessionsShowContextHasPromptAndTools(t *testing.T) {
	state := t.TempDir()
	mgr, err := filestore.Open(filestore.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	st, err := mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	k, err := routing.PeerKey("main", "telegram", "", routing.Group, "-1001234")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	e, _, err := st.Begin(context.Background(), k, sessions.Origin{Channel: "telegram", ChatType: "group", AccountID: "default",
		To: k.Peer, From: "42", At: now})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(context.Background(), sessions.UserText("hello", now)); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, state, "", `agents:
  list:
    - id: main
      systemPrompt: "You are the release bot."
      tools: {allow: [web_fetch], deny: [sessions_history]}
channels:
  telegram:
    accounts:
      default:
        token: "1:a"
        groups:
          "-1001234": {systemPrompt: "This group plans releases."}
`)
	r := gw(t, cfg, "sessions", "show", k.String(), "--context").want(t, 0)
	for _, want := range []string{"system prompt:\n  You are the release bot.\n  \n  This group plans releases.\n",
		"tools: sessions_spawn, sessions_list, web_fetch\n", "user: hello"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("missing %q in:\n%s", want, r.Stdout)
		}
	}
	r = gw(t, cfg, "sessions", "show", k.String(), "--context", "--json").want(t, 0)
	var got struct {
		System   string
		Tools    []string
		Messages []sessions.Message
	}
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.System != "You are the release bot.\n\nThis group plans releases." || strings.Join(got.Tools, ",") != "sessions_spawn,sessions_list,web_fetch" || len(got.Messages) != 1 {
		t.Errorf("json: %+v", got)
	}
}
