package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/webtest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// historyQuestion is a question of GET /api/agents/{id}/sessions/{sid}.
type historyQuestion struct {
	ToolCallID string `json:"toolCallId"`
	MessageID  string `json:"messageId"`
	Text       string `json:"text"`
	Choices    []struct {
		Label string `json:"label"`
		Data  string `json:"data"`
	} `json:"choices"`
	Answered bool   `json:"answered"`
	Chosen   string `json:"chosen"`
	Expired  bool   `json:"expired"`
}

// historyQuestions reads the session's history and returns its questions.
func historyQuestions(t *testing.T, env *webtest.Env, sessionID string) []historyQuestion {
	t.Helper()
	return questionsAt(t, env.URL, sessionID)
}

// questionsAt reads the history of main's session sessionID from the API
// at url and returns its questions.
func questionsAt(t *testing.T, url, sessionID string) []historyQuestion {
	t.Helper()
	res, err := http.Get(url + "/api/agents/main/sessions/" + sessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Questions []historyQuestion `json:"questions"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("history: %s: %v", res.Status, err)
	}
	return body.Questions
}

// press posts a press of button label with data of question messageID; it
// returns the status and the reply's text, or the error body.
func press(t *testing.T, env *webtest.Env, sessionID, messageID, label, data string) (int, string) {
	t.Helper()
	c := newClient(t, env, "")
	res := c.raw("POST", "/api/agents/main/chat", map[string]any{"message": "", "sessionId": sessionID,
		"choice": map[string]string{"messageId": messageID, "label": label, "data": data}})
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	var text strings.Builder
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "delta" {
			var d struct{ Text string }
			mustJSON(t, ev.Data, &d)
			text.WriteString(d.Text)
		}
	}
	return res.StatusCode, text.String()
}

// TestHistoryQuestions: a question the agent asked with buttons comes back
// in the session's history with its buttons signed (after a restart too),
// the model's context never holds a signature, a press of a redrawn
// button runs the turn, and the history then says the question was
// answered, with which label, and hands out no data for it.
func TestHistoryQuestions(t *testing.T) {
	fake := openaitest.NewServer(t)
	ask, _ := json.Marshal(map[string]any{"action": "ask", "text": "Tea or coffee?", "choices": []string{"Tea", " Coffee "}})
	fake.Script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message", Arguments: string(ask)}}},
		openaitest.Reply{Text: "Asked."},
		openaitest.Reply{Text: "Coffee it is."},
	)
	env := webtest.Start(t, webtest.Config{OpenAIBaseURL: fake.BaseURL(), AgentTools: []string{"message"}})
	res := newClient(t, env, "").chat("main", "a drink?", "")
	if res.SessionID == "" || len(res.Choices) != 1 {
		t.Fatalf("chat: session %q, events %q: want a choices event", res.SessionID, res.Events)
	}
	live := res.Choices[0]
	env.Stop()
	env = webtest.Start(t, webtest.Config{OpenAIBaseURL: fake.BaseURL(), AgentTools: []string{"message"}, StateDir: env.StateDir})

	qs := historyQuestions(t, env, res.SessionID)
	if len(qs) != 1 {
		t.Fatalf("history questions = %+v, want the one asked", qs)
	}
	q := qs[0]
	if q.ToolCallID != "c1" || q.Text != "Tea or coffee?" || q.Answered || len(q.Choices) != 2 ||
		q.Choices[0].Label != "Tea" || q.Choices[1].Label != "Coffee" || !strings.Contains(live, q.MessageID) {
		t.Fatalf("question = %+v, want c1's, unanswered, the id of the live one (%s)", q, live)
	}
	for _, c := range q.Choices {
		if !strings.HasPrefix(c.Data, "c1.") {
			t.Fatalf("button %q: data %q, want signed data", c.Label, c.Data)
		}
	}
	for i, r := range fake.Requests() {
		b, _ := json.Marshal(r.Body.Messages)
		for _, c := range q.Choices {
			if strings.Contains(string(b), c.Data) || strings.Contains(string(b), "c1.") {
				t.Fatalf("model request %d holds button data: %s", i, b)
			}
		}
	}

	// The redrawn button is verified like a live one: another label's
	// data, or another question's id, is refused.
	if st, body := press(t, env, res.SessionID, q.MessageID, "Coffee", q.Choices[0].Data); st != http.StatusForbidden {
		t.Fatalf("press with Tea's data as Coffee: %d %s, want 403", st, body)
	}
	other := "0b5c3f4e-2d1a-4c8e-9f67-5a4b3c2d1e0f"
	if st, body := press(t, env, res.SessionID, other, "Coffee", q.Choices[1].Data); st != http.StatusForbidden {
		t.Fatalf("press under another question id: %d %s, want 403", st, body)
	}
	if st, body := press(t, env, res.SessionID, q.MessageID, "Coffee", q.Choices[1].Data); st != http.StatusOK || !strings.Contains(body, "Coffee it is.") {
		t.Fatalf("press: %d %s, want the reply", st, body)
	}
	if st, _ := press(t, env, res.SessionID, q.MessageID, "Tea", q.Choices[0].Data); st != http.StatusOK {
		t.Fatalf("second press: %d, want the first press's turn", st)
	}
	if n := len(fake.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3 (the second press runs nothing)", n)
	}

	qs = historyQuestions(t, env, res.SessionID)
	if len(qs) != 1 || !qs[0].Answered || qs[0].Chosen != "Coffee" || qs[0].Choices[0].Data != "" || qs[0].Choices[1].Data != "" {
		t.Fatalf("after the press: %+v, want it answered with Coffee and no data", qs)
	}
}

// TestHistoryQuestionsExpired: a question asked longer ago than its
// buttons' expiry comes back in the history marked expired, without data
// (a press would be refused as expired); one asked within the expiry
// still has data a press verifies with; an answered question stays
// answered, not expired, however old.
func TestHistoryQuestionsExpired(t *testing.T) {
	mgr, st := mainStore(t)
	ctx := context.Background()
	const peer = "peer-1"
	k, _ := routing.PeerKey("main", "web", "", routing.Direct, peer)
	e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "web", ChatType: "direct", AccountID: "default", To: peer, From: peer, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	keys, err := channels.NewChoiceKeys(bytes.Repeat([]byte{4}, channels.ChoiceKeySize), 0, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}

	// Three questions: one asked 8 days ago, one answered 8 days ago,
	// one asked an hour ago (the expiry is channels.DefaultChoiceTTL, 7 days).
	ids := []string{"1b5c3f4e-2d1a-4c8e-9f67-5a4b3c2d1e0f", "2b5c3f4e-2d1a-4c8e-9f67-5a4b3c2d1e0f", "3b5c3f4e-2d1a-4c8e-9f67-5a4b3c2d1e0f"}
	asked := []time.Time{now.Add(-8 * 24 * time.Hour), now.Add(-8*24*time.Hour + time.Minute), now.Add(-time.Hour)}
	var msgs []sessions.Message
	for i, id := range ids {
		call := "c" + string(rune('1'+i))
		args, _ := json.Marshal(map[string]any{"action": "ask", "text": "Tea or coffee?", "choices": []string{"Tea", "Coffee"}})
		result, _ := json.Marshal(map[string]any{"ok": true, "action": "ask", "messageId": id})
		at := asked[i].UnixMilli()
		msgs = append(msgs,
			sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "a drink?"}}, Timestamp: at},
			sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: call, Name: "message", Arguments: args}}, Timestamp: at},
			sessions.Message{Role: sessions.RoleToolResult, ToolCallID: call, ToolName: "message", Content: []sessions.Content{{Type: sessions.BlockText, Text: string(result)}}, Timestamp: at},
		)
		if i == 1 {
			msgs = append(msgs, sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "Coffee"}},
				Timestamp: at + 1000, RecordIDs: []string{"web:default:" + peer + ":" + id}})
		}
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, msgs...); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(api.New(api.Options{Sessions: mgr.Backend(), Agents: []string{"main"}, Choices: keys}))
	defer srv.Close()
	qs := questionsAt(t, srv.URL, e.SessionID)
	if len(qs) != 3 || qs[0].MessageID != ids[0] || qs[1].MessageID != ids[1] || qs[2].MessageID != ids[2] {
		t.Fatalf("questions = %+v, want the three asked", qs)
	}
	if q := qs[0]; !q.Expired || q.Answered || len(q.Choices) != 2 || q.Choices[0].Label != "Tea" || q.Choices[0].Data != "" || q.Choices[1].Data != "" {
		t.Errorf("the question of 8 days ago = %+v, want it expired, its labels without data", q)
	}
	if q := qs[1]; q.Expired || !q.Answered || q.Chosen != "Coffee" || q.Choices[0].Data != "" || q.Choices[1].Data != "" {
		t.Errorf("the question answered 8 days ago = %+v, want it answered (not expired), without data", q)
	}
	q := qs[2]
	if q.Expired || q.Answered || len(q.Choices) != 2 {
		t.Fatalf("the question of an hour ago = %+v, want it live", q)
	}
	chat := channels.Address{Channel: "web", AccountID: "default", ChatID: peer}
	for _, c := range q.Choices {
		if err := keys.VerifyQuestion(chat, q.MessageID, c.Data, c.Label); err != nil {
			t.Errorf("the hour-old question's %q: data %q: %v, want valid", c.Label, c.Data, err)
		}
	}
}
