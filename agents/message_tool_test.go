package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// fakeRoom records the message tool's calls; err, if set, answers them.
type fakeRoom struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (r *fakeRoom) record(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
	return r.err
}

func (r *fakeRoom) React(_ context.Context, id, emoji string) error {
	return r.record("react " + id + " " + emoji)
}

func (r *fakeRoom) Reply(_ context.Context, id, text string) ([]string, error) {
	return []string{"r1"}, r.record("reply " + id + " " + text)
}

func (r *fakeRoom) Edit(_ context.Context, id, text string) (string, error) {
	return id, r.record("edit " + id + " " + text)
}

func (r *fakeRoom) Delete(_ context.Context, id string) (string, error) {
	return id, r.record("delete " + id)
}

func (r *fakeRoom) Ask(_ context.Context, text string, choices []string) (string, error) {
	return "q1", r.record("ask " + text + " " + strings.Join(choices, "|"))
}

// TestMessageToolArguments: each call of a turn reaches the Room as the
// model asked, or is refused before it with an error naming what is wrong;
// a Room's refusal is shown to the model, an internal error is not.
func TestMessageToolArguments(t *testing.T) {
	cases := []struct {
		name    string
		args    string
		roomErr error
		call    string // what the room saw ("" none)
		errText string // "" for success
	}{
		{"react default target", `{"action":"react","emoji":"👍"}`, nil, "react  👍", ""},
		{"react needs emoji", `{"action":"react"}`, nil, "", "react needs emoji"},
		{"reply", `{"action":"Reply","messageId":" 12 ","text":"hi"}`, nil, "reply 12 hi", ""},
		{"reply needs text", `{"action":"reply","text":"  "}`, nil, "", "reply needs text"},
		{"edit", `{"action":"edit","messageId":"9","text":"new"}`, nil, "edit 9 new", ""},
		{"delete default", `{"action":"delete"}`, nil, "delete ", ""},
		{"ask", `{"action":"ask","text":"Tea or coffee?","choices":[" Tea ","Coffee"]}`, nil, "ask Tea or coffee? Tea|Coffee", ""},
		{"ask needs choices", `{"action":"ask","text":"Tea or coffee?"}`, nil, "", "ask needs choices"},
		{"ask needs text", `{"action":"ask","choices":["a"]}`, nil, "", "ask needs text"},
		{"choices without ask", `{"action":"reply","text":"x","choices":["a"]}`, nil, "", "choices go with ask only"},
		{"no action", `{}`, nil, "", "action is required"},
		{"unknown action", `{"action":"forward"}`, nil, "", `unknown action "forward"`},
		{"other chat", `{"action":"delete","messageId":"9","chatId":"-100"}`, nil, "", `unknown argument "chatId"`},
		{"not json", `[1]`, nil, "", "invalid arguments"},
		{"text too long", `{"action":"reply","text":"` + strings.Repeat("a", maxMessageToolText+1) + `"}`, nil, "", "longer than"},
		{"room refuses", `{"action":"delete","messageId":"5"}`, fmt.Errorf("%w: message 5 was not sent by you", ErrNotOwnMessage), "delete 5", "not sent by you"},
		{"room fails", `{"action":"delete","messageId":"5"}`, errors.New("dial tcp: secret-host"), "delete 5", "internal error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			room := &fakeRoom{err: c.roomErr}
			h := newHarness(t, Defaults{}, []Agent{{ID: "main", Tools: Tools{Allow: []string{MessageToolName}}}}, nil)
			h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
				if n == 0 {
					m := assistantCall("c1", MessageToolName, nil)
					m.Content[0].Arguments = json.RawMessage(c.args)
					return m, nil
				}
				return assistantText("ok"), nil
			}
			k := h.key("main", "1")
			if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("go")}, Room: room}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(room.calls, "|"); got != c.call {
				t.Errorf("room saw %q, want %q", got, c.call)
			}
			hist, _ := h.transcript("main", k).History(context.Background())
			var res sessions.Message
			for _, m := range hist {
				if m.Role == sessions.RoleToolResult {
					res = m
				}
			}
			if res.IsError != (c.errText != "") || !strings.Contains(strings.ReplaceAll(res.Text(), `\"`, `"`), c.errText) {
				t.Errorf("result %q (error %v), want error text %q", res.Text(), res.IsError, c.errText)
			}
			if strings.Contains(res.Text(), "secret-host") {
				t.Error("an internal error reached the model")
			}
		})
	}
}

// TestMessageToolWithoutRoom: a turn with no chat (the API, a subagent)
// offers the tool to an agent that allows it, and refuses every call.
func TestMessageToolWithoutRoom(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main", Tools: Tools{Allow: []string{MessageToolName}}}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			return assistantCall("c1", MessageToolName, map[string]string{"action": "react", "emoji": "👍"}), nil
		}
		return assistantText("ok"), nil
	}
	k := h.key("main", "1")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("go")}}); err != nil {
		t.Fatal(err)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist)
	if r := hist[len(hist)-2]; r.Role != sessions.RoleToolResult || !r.IsError || !strings.Contains(r.Text(), "no chat room") {
		t.Fatalf("result = %+v", r)
	}
	if !h.r.OffersMessageTool("main") || h.r.OffersMessageTool("nobody") {
		t.Error("OffersMessageTool disagrees with the policy")
	}
}
