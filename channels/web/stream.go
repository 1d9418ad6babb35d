package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gateway/gateway/channels"
)

// The chat stream outlives the server's write timeout: each write gets
// sseWriteWindow, and a comment line every sseKeepAlive keeps proxies and
// the deadline alive while the model thinks.
const (
	sseWriteWindow = time.Minute
	sseKeepAlive   = 15 * time.Second
)

// sseWriter writes one text/event-stream answer.
type sseWriter struct {
	w  http.ResponseWriter
	fl http.Flusher
	rc *http.ResponseController
	// end is closed when the server shuts down (Adapter.EndStreams): a
	// stream still waiting then ends without its final event, and the
	// client asks for the rest again (from the next process).
	end <-chan struct{}
}

// startSSE sends the stream's headers; the stream gives up waiting when
// end is closed.
func startSSE(w http.ResponseWriter, end <-chan struct{}) *sseWriter {
	fl, _ := w.(http.Flusher)
	s := &sseWriter{w: w, fl: fl, rc: http.NewResponseController(w), end: end}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.extend()
	w.WriteHeader(http.StatusOK)
	s.flush()
	return s
}

func (s *sseWriter) extend() { _ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteWindow)) }

func (s *sseWriter) flush() {
	if s.fl != nil {
		s.fl.Flush()
	}
}

// event writes one event with its id.
func (s *sseWriter) event(id, name string, data any) {
	b, _ := json.Marshal(data)
	s.extend()
	fmt.Fprintf(s.w, "id: %s\nevent: %s\ndata: %s\n\n", id, name, b)
}

func (s *sseWriter) ping() {
	s.extend()
	fmt.Fprint(s.w, ": ping\n\n")
	s.flush()
}

// doneData is the data of the final event.
func doneData(sessionID string, tokens int64) map[string]any {
	return map[string]any{"sessionId": sessionID, "tokenEstimate": tokens}
}

// live streams l's events after the first from (the client saw events 1
// to from), then the final event once the reply is in; it returns then, or
// when ctx ends (the client went away: the log keeps the rest for it) or
// the server shuts down (s.end).
func (s *sseWriter) live(ctx context.Context, l *turnLog, from int) {
	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	for {
		evs, final, changed := l.read(from)
		for _, ev := range evs {
			from++
			s.event(eventID(l.turn, from), ev.name, ev.data)
		}
		if final != nil {
			s.event(l.turn.String()+"/done", "done", doneData(final.SessionID, final.TokenEstimate))
			s.flush()
			return
		}
		s.flush()
		select {
		case <-ctx.Done():
			return
		case <-s.end:
			return
		case <-keepAlive.C:
			s.ping()
		case <-changed:
		}
	}
}

// await waits for l's reply, pinging meanwhile; nil when ctx ended or the
// server shut down first.
func (s *sseWriter) await(ctx context.Context, l *turnLog) *channels.Outbound {
	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	for {
		_, final, changed := l.read(0)
		if final != nil {
			return final
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.end:
			return nil
		case <-keepAlive.C:
			s.ping()
		case <-changed:
		}
	}
}

// whole sends a reply at once to a client whose stream is gone: a reply
// event carrying the whole text, which replaces whatever the client showed
// of the turn (a turn run again after a restart may have streamed other
// words), or an error event for a notice; then the final event. A client
// that saw the reply event already (pos.reply) gets the final event only.
func (s *sseWriter) whole(t turnID, pos position, st channels.TurnState) {
	if !pos.reply {
		if st.Status == channels.TurnAnswered {
			s.event(t.String()+"/reply", "reply", map[string]any{"text": st.Text, "replace": true})
		} else {
			s.event(t.String()+"/reply", "error", map[string]string{"message": st.Text})
		}
	}
	s.event(t.String()+"/done", "done", doneData(st.SessionID, st.TokenEstimate))
	s.flush()
}

// stateOf is the durable-looking state of a reply taken from a log.
func stateOf(out *channels.Outbound) channels.TurnState {
	st := channels.TurnState{Status: channels.TurnAnswered, Text: out.Text, SessionID: out.SessionID, TokenEstimate: out.TokenEstimate}
	if out.Failed {
		st.Status = channels.TurnEnded
	}
	return st
}
