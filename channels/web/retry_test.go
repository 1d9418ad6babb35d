package web

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/gateway/gateway/channels"
)

// postRaw posts body and returns the response (the caller closes it).
func (r *rig) postRaw(t *testing.T, body string) *http.Response {
	t.Helper()
	res, err := http.Post(r.srv.URL+"/api/agents/main/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// A chat request sent again with its requestId (the first answer's
// headers never came) is the same message: one inbound, one turn, and the
// retry gets that turn's stream, live or, after a restart, whole.
func TestRetriedRequestIsOneTurn(t *testing.T) {
	var mu sync.Mutex
	var answer *channels.TurnState
	r := newRig(t, func(ctx context.Context, in channels.Inbound) (channels.TurnState, error) {
		mu.Lock()
		defer mu.Unlock()
		if answer == nil {
			return channels.TurnState{Status: channels.TurnPending}, nil
		}
		return *answer, nil
	})
	rid := uuid.NewString()
	body := `{"message":"hi","requestId":"` + rid + `"}`
	first := r.post(t, context.Background(), body)
	turn := first.res.Header.Get("X-Turn-Id")
	first.next(t)
	in := r.inbound(t, 0)
	if in.MessageID != rid || !strings.HasSuffix(turn, "."+rid) {
		t.Fatalf("message id %q turn %q, want the request id %s", in.MessageID, turn, rid)
	}
	r.a.Delta(context.Background(), replyTo(in, ""), "par")

	// Sent again while the turn runs: its stream from the start.
	again := r.post(t, context.Background(), body)
	if got := again.res.Header.Get("X-Turn-Id"); got != turn {
		t.Errorf("retry's turn %q, want %q", got, turn)
	}
	r.a.Delta(context.Background(), replyTo(in, ""), "tial")
	if err := r.a.Send(context.Background(), replyTo(in, "partial")); err != nil {
		t.Fatal(err)
	}
	if evs := again.rest(t); strings.Join(names(evs), " ") != "turn delta delta done" || texts(evs) != "partial" {
		t.Errorf("retry's stream %+v, want the whole turn", evs)
	}
	first.rest(t)

	// After a restart (no stream held) the journal calls it a duplicate:
	// the retry gets the reply whole.
	r.a.dropLog(r.a.logOf(rid))
	mu.Lock()
	answer = &channels.TurnState{Status: channels.TurnAnswered, Text: "partial", SessionID: "s-1"}
	mu.Unlock()
	res := r.postRaw(t, body)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Turn-Id") != turn ||
		!strings.Contains(string(b), "event: reply\ndata: {\"replace\":true,\"text\":\"partial\"}") {
		t.Errorf("retry after a restart: %s %s", res.Status, b)
	}
	r.mu.Lock()
	if len(r.ins) != 1 {
		t.Errorf("%d messages handled, want 1", len(r.ins))
	}
	r.mu.Unlock()

	// A new chat's conversation follows from the request id: the same
	// for a retry, another for another request.
	other := r.post(t, context.Background(), `{"message":"hi","requestId":"`+uuid.NewString()+`"}`)
	if p, _, _ := strings.Cut(other.res.Header.Get("X-Turn-Id"), "."); strings.HasPrefix(turn, p+".") {
		t.Errorf("another request id got the same conversation %s", p)
	}
	other.res.Body.Close()
}

func TestRequestIDChecked(t *testing.T) {
	r := newRig(t, nil)
	res := r.postRaw(t, `{"message":"hi","requestId":"ABC"}`)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `requestId: \"ABC\" is not a lower-case UUID`) {
		t.Errorf("bad request id: %s %s", res.Status, b)
	}
	// One request id, two chats: the second is refused.
	r.a.opts.Lookup = func(agentID, sessionID string) (string, bool, error) {
		return "0d2f6a3c-9a59-4b1e-8f0e-3c2b1a0d9e8f", true, nil
	}
	rid := uuid.NewString()
	first := r.post(t, context.Background(), `{"message":"hi","requestId":"`+rid+`"}`)
	defer first.res.Body.Close()
	res = r.postRaw(t, `{"message":"hi","requestId":"`+rid+`","sessionId":"s-2"}`)
	b, _ = io.ReadAll(res.Body)
	if res.StatusCode != http.StatusConflict || !strings.Contains(string(b), "was sent before for another chat") {
		t.Errorf("request id reused for another chat: %s %s", res.Status, b)
	}
}
