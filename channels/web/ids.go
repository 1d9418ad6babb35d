package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// A turn id names one chat request and the reply to it:
// "<conversation>.<message>", two UUIDs the server chose when it accepted
// the request (the conversation, or peer, is the session's web peer; the
// message is the inbound message id, the journal's record of the request).
// Both are random, so a turn id cannot be guessed, and together they are
// all the server needs to find the turn in durable state after a restart.
//
// Event ids are "<turn>/<n>" for the n-th event of the turn's stream as
// this process sent it (n = 0 is the opening turn event), "<turn>/reply"
// for the whole reply sent at once to a client that reconnected after the
// stream it saw is gone, and "<turn>/done" for the final event. A client
// that reconnects with Last-Event-ID gets what follows that event.
type turnID struct{ peer, msg string }

func (t turnID) String() string { return t.peer + "." + t.msg }

// parseTurnID reads a turn id, with an error that says what is wrong.
func parseTurnID(s string) (turnID, error) {
	peer, msg, ok := strings.Cut(s, ".")
	if !ok {
		return turnID{}, fmt.Errorf("turn id %q: want <conversation>.<message>, two UUIDs joined by a dot", s)
	}
	if !canonicalUUID(peer) {
		return turnID{}, fmt.Errorf("turn id %q: conversation %q is not a lower-case UUID", s, peer)
	}
	if !canonicalUUID(msg) {
		return turnID{}, fmt.Errorf("turn id %q: message %q is not a lower-case UUID", s, msg)
	}
	return turnID{peer: peer, msg: msg}, nil
}

func canonicalUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// position is where in a turn's stream a client is (its Last-Event-ID).
type position struct {
	n     int  // events of this process's stream seen (n-th event id)
	reply bool // saw the whole reply (reply event)
	done  bool // saw the final event
}

// eventID is the id of the n-th event of t's stream.
func eventID(t turnID, n int) string { return t.String() + "/" + strconv.Itoa(n) }

// parseEventID reads a Last-Event-ID for turn t; "" is the start.
func parseEventID(s string, t turnID) (position, error) {
	if s == "" {
		return position{n: -1}, nil
	}
	turn, rest, ok := strings.Cut(s, "/")
	if !ok {
		return position{}, fmt.Errorf("Last-Event-ID %q: want <turn>/<n>, <turn>/reply or <turn>/done", s)
	}
	if turn != t.String() {
		return position{}, fmt.Errorf("Last-Event-ID %q names another turn than %s", s, t)
	}
	switch rest {
	case "reply":
		return position{reply: true}, nil
	case "done":
		return position{done: true}, nil
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return position{}, fmt.Errorf("Last-Event-ID %q: event %q is not a number, reply or done", s, rest)
	}
	return position{n: n}, nil
}
