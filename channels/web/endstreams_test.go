package web

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/gateway/gateway/channels"
)

// TestEndStreamsEndsEveryWaitingStream: at shutdown (EndStreams) every
// stream still waiting for a reply ends without a final event — the
// chat's own, a reconnected one that saw the reply and waits for the end,
// and one waiting for a turn pending in durable state — so the HTTP
// server's shutdown does not wait for them; each client asks again.
func TestEndStreamsEndsEveryWaitingStream(t *testing.T) {
	r := newRig(t, func(ctx context.Context, in channels.Inbound) (channels.TurnState, error) {
		return channels.TurnState{Status: channels.TurnPending}, nil
	})
	chat := r.post(t, context.Background(), `{"message":"hi"}`)
	turn := chat.res.Header.Get("X-Turn-Id")
	chat.next(t)
	r.a.Delta(context.Background(), replyTo(r.inbound(t, 0), ""), "half")
	chat.next(t)
	res, sawReply := r.get(t, context.Background(), "main", turn, turn+"/reply", "text/event-stream")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("resume after the reply: %s", res.Status)
	}
	pending := uuid.NewString() + "." + uuid.NewString() // another process's turn
	res, late := r.get(t, context.Background(), "main", pending, "", "text/event-stream")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("resume of a pending turn: %s", res.Status)
	}

	r.a.EndStreams()
	for name, s := range map[string]*stream{"chat": chat, "reply seen": sawReply, "pending": late} {
		if evs := s.rest(t); slices.Contains(names(evs), "done") {
			t.Errorf("%s stream: %v, want its end without a final event", name, names(evs))
		}
	}
	// One that comes later gets what there is and ends.
	res, again := r.get(t, context.Background(), "main", turn, turn+"/1", "text/event-stream")
	if evs := again.rest(t); res.StatusCode != http.StatusOK || len(evs) != 0 {
		t.Errorf("a resume after the end: %s %v", res.Status, names(evs))
	}
	r.a.EndStreams() // twice is fine
}
