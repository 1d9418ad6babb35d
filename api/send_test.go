package api_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/internal/webtest"
)

// TestSendIntoSessionByKey (issue 27): POST
// /api/agents/{id}/sessions/{key}/messages, operator only (the token),
// delivers the text into the session's Telegram chat through the daemon's
// outbox, records it in the transcript and starts no agent turn; the
// session may be named by key (in any case) or id; a bad text is 400, an unknown
// session 404, another agent's key 404.
func TestSendIntoSessionByKey(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	env := webtest.Start(t, webtest.Config{Token: "tok", TelegramAPIRoot: tg.URL, TelegramToken: tg.Token(), Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tg.DM(5151, "hello")
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, env, "tok")
	const key = "agent:main:telegram:direct:5151"
	path := "/api/agents/main/sessions/" + url.PathEscape(key) + "/messages"

	if code, _ := newClient(t, env, "").do("POST", path, map[string]any{"text": "x"}); code != 401 {
		t.Errorf("without the token: %d, want 401", code)
	}
	code, body := c.do("POST", path, map[string]any{"text": "Operator here: maintenance at 18:00."})
	if code != 200 {
		t.Fatalf("send by key: %d %v", code, body)
	}
	sent, _ := body["sent"].(map[string]any)
	if sent["channel"] != "telegram" || sent["chatId"] != "5151" || sent["sessionId"] == "" {
		t.Errorf("sent = %v, want telegram chat 5151 and the session id", sent)
	}
	msgs, err := tg.WaitSent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if m := msgs[1]; m.ChatID != 5151 || m.Text != "Operator here: maintenance at 18:00." {
		t.Errorf("second message in Telegram: %+v, want the operator's text in chat 5151", m)
	}
	sid, _ := sent["sessionId"].(string)
	if code, body := c.do("POST", "/api/agents/main/sessions/"+sid+"/messages", map[string]any{"text": "by id"}); code != 200 {
		t.Errorf("send by session id: %d %v", code, body)
	}
	if _, err := tg.WaitSent(ctx, 3); err != nil {
		t.Fatal(err)
	}
	code, hist := c.do("GET", "/api/agents/main/sessions/"+sid, nil)
	if code != 200 {
		t.Fatalf("history: %d", code)
	}
	raw, _ := hist["messages"].([]any)
	var texts []string
	for _, m := range raw {
		mm, _ := m.(map[string]any)
		if mm["role"] == "assistant" {
			texts = append(texts, messageText(mm))
		}
	}
	if len(texts) != 3 || texts[1] != "Operator here: maintenance at 18:00." || texts[2] != "by id" {
		t.Errorf("assistant messages in the transcript %q, want the reply then both operator messages (no new turn)", texts)
	}
	for _, tc := range []struct {
		path string
		body any
		want int
	}{
		{path, map[string]any{"text": "  "}, 400},
		{path, `{"text": "x", "extra": 1}`, 400},
		{"/api/agents/main/sessions/" + url.PathEscape("agent:main:telegram:direct:1") + "/messages", map[string]any{"text": "x"}, 404},
		{"/api/agents/main/sessions/" + url.PathEscape("agent:other:telegram:direct:5151") + "/messages", map[string]any{"text": "x"}, 404},
		{"/api/agents/main/sessions/no-such-id/messages", map[string]any{"text": "x"}, 404},
	} {
		if code, body := c.do("POST", tc.path, tc.body); code != tc.want {
			t.Errorf("POST %s %v: %d %v, want %d", tc.path, tc.body, code, body, tc.want)
		}
	}
	if n := tg.SentCount(); n != 3 {
		t.Errorf("%d messages sent to Telegram, want 3 (the refused ones sent nothing)", n)
	}
	// A key spelt in capitals names the same session, as routing.Parse
	// and every other route read it (it was looked up as a session id:
	// 404).
	caps := "/api/agents/main/sessions/" + url.PathEscape("AGENT:MAIN:TELEGRAM:DIRECT:5151") + "/messages"
	if code, body := c.do("POST", caps, map[string]any{"text": "in capitals"}); code != 200 {
		t.Fatalf("send by a key in capitals: %d %v, want 200", code, body)
	}
	if msgs, err := tg.WaitSent(ctx, 4); err != nil || msgs[3].Text != "in capitals" {
		t.Errorf("fourth message in Telegram: %v %v", msgs, err)
	}
}

// messageText joins a transcript message's text blocks as the API shows
// them.
func messageText(m map[string]any) string {
	var s string
	content, _ := m["content"].([]any)
	for _, c := range content {
		if b, _ := c.(map[string]any); b["type"] == "text" {
			t, _ := b["text"].(string)
			s += t
		}
	}
	return s
}
