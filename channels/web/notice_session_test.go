package web

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestNoticeKeepsTheRequestsSession: a turn of an existing session ended
// by a notice (Failed, no session named) ends its stream with the session
// the request continued, which is still there; a reply that names no
// session (/delete ended it) still ends with none, the page's sign to
// start a new chat.
func TestNoticeKeepsTheRequestsSession(t *testing.T) {
	const peer = "0d2f6a3c-9a59-4b1e-8f0e-3c2b1a0d9e8f"
	r := newRigWith(t, Options{Lookup: func(agent, session string) (string, bool, error) {
		return peer, session == "s-1", nil
	}})
	for _, tc := range []struct {
		name string
		out  func(channels.Inbound) channels.Outbound
		want string
	}{
		{"notice", func(in channels.Inbound) channels.Outbound {
			return channels.Outbound{Address: in.Address, ReplyToID: in.MessageID, Failed: true,
				Text: "The model could not answer right now."}
		}, `"sessionId":"s-1"`},
		{"after /delete", func(in channels.Inbound) channels.Outbound {
			return channels.Outbound{Address: in.Address, ReplyToID: in.MessageID, Text: "Deleted."}
		}, `"sessionId":""`},
	} {
		s := r.post(t, context.Background(), `{"message":"hi","sessionId":"s-1"}`)
		s.next(t)
		r.mu.Lock()
		in := r.ins[len(r.ins)-1]
		r.mu.Unlock()
		if err := r.a.Send(context.Background(), tc.out(in)); err != nil {
			t.Fatal(err)
		}
		evs := s.rest(t)
		if len(evs) == 0 || evs[len(evs)-1].Name != "done" || !strings.Contains(evs[len(evs)-1].Data, tc.want) {
			t.Errorf("%s: %+v, want a final event with %s", tc.name, evs, tc.want)
		}
	}
}
