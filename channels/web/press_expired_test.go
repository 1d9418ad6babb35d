package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
)

// TestPressOfAnEarlierSessionIsExpired: the web chat's press carries the
// minute its question was asked (so the dispatcher can tell a question of
// a session since reset), and the dispatcher's verdict that it is such a
// question is answered 403 "This question has expired.", not a 503 that
// asks the page to try again.
func TestPressOfAnEarlierSessionIsExpired(t *testing.T) {
	keys, err := channels.NewChoiceKeys(bytes.Repeat([]byte{5}, channels.ChoiceKeySize), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	peer := ""
	var asked time.Time
	r := newRigRefusing(t, Options{Choices: keys, Lookup: func(agent, session string) (string, bool, error) {
		return peer, session == "s1" && peer != "", nil
	}}, func(in channels.Inbound) error {
		if !in.Press {
			return nil
		}
		asked = in.PressAsked
		return fmt.Errorf("dispatch: press: %w", channels.ErrChoiceExpired)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := r.post(t, ctx, `{"message":"tea or coffee?"}`)
	if ev, ok := first.next(t); !ok || ev.Name != "turn" {
		t.Fatalf("first event = %+v", ev)
	}
	in := r.inbound(t, 0)
	peer = in.ChatID
	buttons, err := keys.Question(in.Address, []string{"Tea", "Coffee"})
	if err != nil {
		t.Fatal(err)
	}
	qid, err := r.a.Ask(ctx, channels.Outbound{Address: in.Address, ReplyToID: in.MessageID}, "Which one?", buttons)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := first.next(t)
	var q choiceEvent
	if ev.Name != "choices" || json.Unmarshal([]byte(ev.Data), &q) != nil || len(q.Choices) != 2 {
		t.Fatalf("choices event = %+v", ev)
	}
	b, _ := json.Marshal(map[string]any{"message": "", "sessionId": "s1",
		"choice": map[string]string{"messageId": qid, "data": q.Choices[1].Data, "label": "Coffee"}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL+"/api/agents/main/chat", bytes.NewReader(b))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), channels.PressExpiredText) {
		t.Fatalf("press of an earlier session's question: %s %s", res.Status, body)
	}
	if asked.IsZero() || time.Since(asked) > 2*time.Minute {
		t.Fatalf("the press carried asked = %v, want the minute the question was asked", asked)
	}
}
