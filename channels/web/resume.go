package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// turnLookupLimit bounds the durable lookup of one resume request.
const turnLookupLimit = 10 * time.Second

// ServeTurn handles GET /api/agents/{id}/chat/turns/{turn} (the caller
// checked auth): a client whose chat stream dropped gets the rest of the
// turn. With Accept: text/event-stream it is a stream like the chat's:
//
//   - while this process holds the turn's stream (from the request until
//     keepDone after the reply), the events after Last-Event-ID, then the
//     rest live: exactly what the client missed;
//   - otherwise (a restart, or later) the reply whole, from the session's
//     transcript, in one reply event that replaces what the client showed
//     (waiting first while the turn is still pending: a restart runs it
//     again or sends its stored reply);
//   - after the final event: 204, nothing more.
//
// Otherwise it answers JSON {turnId, status, text, sessionId} at once,
// status pending, answered or ended. A turn id that is not well formed or a
// Last-Event-ID of another turn is a 400, an unknown turn a 404.
func (a *Adapter) ServeTurn(w http.ResponseWriter, r *http.Request) {
	agent := agentOf(r)
	t, err := parseTurnID(r.PathValue("turn"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	pos, err := parseEventID(r.Header.Get("Last-Event-ID"), t)
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		a.serveTurnJSON(w, r, agent, t)
		return
	}
	a.resume(w, r, agent, t, pos)
}

// resume serves turn t's stream from pos (ServeTurn; a chat request sent
// again with its request id).
func (a *Adapter) resume(w http.ResponseWriter, r *http.Request, agent string, t turnID, pos position) {
	l, created := a.openLog(t, agent, a.senderOf(w, r), "", true)
	if l == nil {
		WriteError(w, http.StatusNotFound, notFound(agent, t))
		return
	}
	if !l.late {
		a.resumeLive(w, r, l, pos)
		return
	}
	if _, final, _ := l.read(0); final != nil {
		a.resumeWhole(w, t, pos, stateOf(final))
		return
	}
	st, err := a.durable(r.Context(), agent, t)
	if err != nil {
		if created {
			a.dropLog(l)
		}
		a.log.Warn("turn lookup failed", zap.String("turn_id", t.String()), zap.Error(err))
		WriteError(w, http.StatusServiceUnavailable, "turn "+t.String()+": lookup failed, try again")
		return
	}
	switch st.Status {
	case channels.TurnUnknown:
		if created {
			a.dropLog(l)
		}
		WriteError(w, http.StatusNotFound, notFound(agent, t))
	case channels.TurnAnswered, channels.TurnEnded:
		a.resumeWhole(w, t, pos, st)
	default: // pending
		if pos.done {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		s := startSSE(w, a.ended)
		if st, ok := a.awaitPending(r.Context(), s, l, agent, t); ok {
			s.whole(t, pos, st)
		}
	}
}

// pendingPoll is how often a pending turn's durable state is read again
// while a reconnected client waits for it: its reply comes to the log when
// this process sends it, but another replica may be the one that runs it.
const pendingPoll = 2 * time.Second

// awaitPending waits for a pending turn's outcome: the reply sent to its
// late log l, or the transcript's, whichever comes first; false when the
// client went away or the server shuts down.
func (a *Adapter) awaitPending(ctx context.Context, s *sseWriter, l *turnLog, agent string, t turnID) (channels.TurnState, bool) {
	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	poll := time.NewTicker(pendingPoll)
	defer poll.Stop()
	for {
		_, final, changed := l.read(0)
		if final != nil {
			return stateOf(final), true
		}
		select {
		case <-ctx.Done():
			return channels.TurnState{}, false
		case <-s.end:
			return channels.TurnState{}, false
		case <-keepAlive.C:
			s.ping()
		case <-changed:
		case <-poll.C:
			st, err := a.durable(ctx, agent, t)
			switch {
			case err != nil:
				a.log.Debug("turn lookup failed; waiting on", zap.String("turn_id", t.String()), zap.Error(err))
			case st.Status == channels.TurnAnswered || st.Status == channels.TurnEnded:
				return st, true
			case st.Status == channels.TurnUnknown:
				return channels.TurnState{Status: channels.TurnEnded,
					Text: "This message's session was reset or deleted before it was answered."}, true
			}
		}
	}
}

// resumeLive serves a turn whose whole stream this process holds.
func (a *Adapter) resumeLive(w http.ResponseWriter, r *http.Request, l *turnLog, pos position) {
	switch {
	case pos.done:
		w.WriteHeader(http.StatusNoContent)
		return
	case pos.reply:
		// The client got the reply whole before; only the end is left.
		s := startSSE(w, a.ended)
		if final := s.await(r.Context(), l); final != nil {
			s.whole(l.turn, pos, stateOf(final))
		}
		return
	}
	if n := l.length(); pos.n > n {
		WriteError(w, http.StatusBadRequest, fmt.Sprintf("Last-Event-ID %s: turn %s has sent %d events so far, not %d",
			eventID(l.turn, pos.n), l.turn, n, pos.n))
		return
	}
	s := startSSE(w, a.ended)
	from := pos.n
	if from < 0 {
		s.event(eventID(l.turn, 0), "turn", map[string]string{"turnId": l.turn.String()})
		from = 0
	}
	s.live(r.Context(), l, from)
}

// resumeWhole answers a turn whose reply is known with the reply whole.
func (a *Adapter) resumeWhole(w http.ResponseWriter, t turnID, pos position, st channels.TurnState) {
	if pos.done {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	startSSE(w, a.ended).whole(t, pos, st)
}

// durable asks durable state about turn t (TurnUnknown without TurnOf).
func (a *Adapter) durable(ctx context.Context, agent string, t turnID) (channels.TurnState, error) {
	if a.opts.TurnOf == nil {
		return channels.TurnState{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, turnLookupLimit)
	defer cancel()
	return a.opts.TurnOf(ctx, inboundOf(agent, t))
}

// turnJSON is the JSON answer of ServeTurn.
type turnJSON struct {
	TurnID    string `json:"turnId"`
	Status    string `json:"status"` // pending, answered or ended
	Text      string `json:"text,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
}

// serveTurnJSON answers the turn's state at once.
func (a *Adapter) serveTurnJSON(w http.ResponseWriter, r *http.Request, agent string, t turnID) {
	if l := a.logOf(t.msg); l != nil {
		if l.turn != t || l.agent != agent || l.sender != a.senderOf(w, r) {
			WriteError(w, http.StatusNotFound, notFound(agent, t))
			return
		}
		if _, final, _ := l.read(0); final != nil {
			writeTurn(w, t, stateOf(final))
			return
		}
		if !l.late {
			writeTurn(w, t, channels.TurnState{Status: channels.TurnPending})
			return
		}
	}
	st, err := a.durable(r.Context(), agent, t)
	if err != nil {
		a.log.Warn("turn lookup failed", zap.String("turn_id", t.String()), zap.Error(err))
		WriteError(w, http.StatusServiceUnavailable, "turn "+t.String()+": lookup failed, try again")
		return
	}
	if st.Status == channels.TurnUnknown {
		WriteError(w, http.StatusNotFound, notFound(agent, t))
		return
	}
	writeTurn(w, t, st)
}

func writeTurn(w http.ResponseWriter, t turnID, st channels.TurnState) {
	status := map[channels.TurnStatus]string{channels.TurnPending: "pending", channels.TurnAnswered: "answered",
		channels.TurnEnded: "ended"}[st.Status]
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, turnJSON{TurnID: t.String(), Status: status, Text: st.Text, SessionID: st.SessionID})
}

func notFound(agent string, t turnID) string {
	return "turn " + t.String() + " not found for agent " + agent +
		" (never accepted here, or its session was reset or deleted since)"
}
