package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
)

// TestChoicePress: a question asked in a turn reaches that turn's stream
// as a choices event; a press posted with the session continues its
// conversation as a press whose text is the label; a press with another
// label (or data), or under another question's id, is refused 403 before
// the handler; pressing again is the same turn, never a second message.
func TestChoicePress(t *testing.T) {
	keys, err := channels.NewChoiceKeys(bytes.Repeat([]byte{5}, channels.ChoiceKeySize), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	peer := ""
	r := newRigWith(t, Options{Choices: keys, Lookup: func(agent, session string) (string, bool, error) {
		return peer, session == "s1" && peer != "", nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := r.post(t, ctx, `{"message":"tea or coffee?"}`)
	if ev, ok := first.next(t); !ok || ev.Name != "turn" {
		t.Fatalf("first event = %+v", ev)
	}
	in := r.inbound(t, 0)
	peer = in.ChatID
	out := channels.Outbound{Address: in.Address, ReplyToID: in.MessageID}
	buttons, err := keys.Question(in.Address, []string{"Tea", "Coffee"})
	if err != nil {
		t.Fatal(err)
	}
	qid, err := r.a.Ask(ctx, out, "Which one?", buttons)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := first.next(t)
	var q choiceEvent
	if ev.Name != "choices" || json.Unmarshal([]byte(ev.Data), &q) != nil || q.MessageID != qid || len(q.Choices) != 2 || q.Choices[1].Label != "Coffee" {
		t.Fatalf("choices event = %+v", ev)
	}
	press := func(label, data string) *http.Response {
		b, _ := json.Marshal(map[string]any{"message": "", "sessionId": "s1", "choice": map[string]string{"messageId": qid, "data": data, "label": label}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL+"/api/agents/main/chat", bytes.NewReader(b))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	res := press("Coffee", q.Choices[0].Data) // Tea's data with Coffee's label
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), channels.PressInvalidText) {
		t.Fatalf("forged press: %s %s", res.Status, body)
	}
	qid0 := qid
	qid = "0b5c3f4e-2d1a-4c8e-9f67-5a4b3c2d1e0f" // the right button under another question's id
	res = press("Coffee", q.Choices[1].Data)
	body, _ = io.ReadAll(res.Body)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), channels.PressInvalidText) {
		t.Fatalf("press under another id: %s %s", res.Status, body)
	}
	qid = qid0
	if res := press("Coffee", q.Choices[1].Data); res.StatusCode != http.StatusOK {
		t.Fatalf("press: %s", res.Status)
	}
	if res := press("Coffee", q.Choices[1].Data); res.StatusCode != http.StatusOK { // the same turn's stream
		t.Fatalf("second press: %s", res.Status)
	}
	r.mu.Lock()
	ins := append([]channels.Inbound(nil), r.ins...)
	r.mu.Unlock()
	if len(ins) != 2 {
		t.Fatalf("handler got %d messages, want the question's turn and one press", len(ins))
	}
	p := ins[1]
	if !p.Press || p.Text != "Coffee" || p.MessageID != qid || p.ChatID != peer {
		t.Fatalf("press = %+v", p)
	}
}
