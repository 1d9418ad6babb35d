package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Name is the channel name of this adapter.
const Name = "web"

// MaxBody is the largest accepted chat request body.
const MaxBody = 1 << 20

// Options configures the adapter.
type Options struct {
	Logger *zap.Logger
	// Lookup maps an existing session id of an agent to the conversation
	// (peer) id it belongs to; ok is false for a session that is not
	// (or no longer) the current one of a web chat, err a failure to
	// read the sessions (the request is then answered 503, not 404: the
	// page takes a 404 for a session deleted elsewhere). nil disables
	// continuing by session id.
	Lookup func(agentID, sessionID string) (peer string, ok bool, err error)
	// TurnOf reads a turn's outcome from durable state (the dispatcher's
	// TurnOf): a client reconnecting after its turn's stream is gone (a
	// restart, or long after) gets the reply from it. nil: only turns
	// whose stream this process still holds can be resumed.
	TurnOf func(ctx context.Context, in channels.Inbound) (channels.TurnState, error)
	// Identity names the sender of each request (Inbound.Principal, which
	// the per-sender limits bind; identity.go); nil: none, the limits bind
	// each conversation.
	Identity *Identity
	// Choices signs and verifies choice buttons (choices.go); nil: a
	// press is refused as not valid.
	Choices *channels.ChoiceKeys
	// Now is the gateway's clock, the one the web channel stamps a
	// message's sending time with (Inbound.Time): the gateway is this
	// channel's platform. nil: time.Now.
	Now func() time.Time
}

// now reads the gateway's clock (Options.Now).
func (a *Adapter) now() time.Time {
	if a.opts.Now != nil {
		return a.opts.Now()
	}
	return time.Now()
}

// Adapter is the web channel. Create it with New.
type Adapter struct {
	opts Options
	log  *zap.Logger

	mu      sync.Mutex
	handler channels.Handler    // guarded by mu; set while Run runs
	stopped bool                // guarded by mu; Run has returned (the daemon shuts down)
	turns   map[string]*turnLog // guarded by mu; by inbound message id (turns.go)

	accepting     chan struct{} // closed once Run has installed the handler
	acceptingOnce sync.Once

	ended     chan struct{} // closed by EndStreams
	endedOnce sync.Once
}

var (
	_ channels.Adapter      = (*Adapter)(nil)
	_ channels.Streamer     = (*Adapter)(nil)
	_ channels.ToolStreamer = (*Adapter)(nil)
)

// New returns a web adapter.
func New(opts Options) *Adapter {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Adapter{opts: opts, log: opts.Logger.With(zap.String("channel", Name)),
		turns: map[string]*turnLog{}, accepting: make(chan struct{}), ended: make(chan struct{})}
}

// Accepting is closed once Run has installed its handler: from then on a
// chat request is taken instead of answered 503 "not ready". The daemon
// waits for it before it reports ready.
func (a *Adapter) Accepting() <-chan struct{} { return a.accepting }

// EndStreams ends the chat streams still waiting for a reply (a turn the
// shutdown left for the next start, a reconnected client waiting for a
// pending turn): the daemon calls it as its HTTP server shuts down, after
// the grace period in which running turns finish and stream their replies,
// and the server's shutdown would otherwise wait for them until its
// deadline. A stream ended so gets no final event: its client asks for
// the rest again (Last-Event-ID), from the next process. Streams opened
// later end as soon as they have sent what there is. Safe to call more
// than once.
func (a *Adapter) EndStreams() { a.endedOnce.Do(func() { close(a.ended) }) }

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// AccountID implements channels.Adapter.
func (a *Adapter) AccountID() string { return "default" }

// Run makes the chat endpoint accept requests until ctx ends.
func (a *Adapter) Run(ctx context.Context, h channels.Handler) error {
	a.mu.Lock()
	a.handler = h
	a.mu.Unlock()
	a.acceptingOnce.Do(func() { close(a.accepting) })
	<-ctx.Done()
	a.mu.Lock()
	a.handler, a.stopped = nil, true
	a.mu.Unlock()
	return nil
}

// answered lists the request ids out answers: out.Answers (a merged turn
// answers every request merged into it) and out.ReplyToID.
func answered(out channels.Outbound) []string {
	ids := out.Answers
	if out.ReplyToID != "" && !slices.Contains(ids, out.ReplyToID) {
		ids = append(slices.Clip(ids), out.ReplyToID)
	}
	return ids
}

// Send delivers the final reply to the stream of every request it answers
// (turns.go keeps it for clients that reconnect). A request whose client
// went away is not an error: the reply is in the session's transcript.
func (a *Adapter) Send(ctx context.Context, out channels.Outbound) error {
	now := time.Now()
	for _, id := range answered(out) {
		if l := a.logOf(id); l != nil {
			l.finish(out, now)
		}
	}
	return nil
}

// Delta streams a piece of the reply to every request it answers.
func (a *Adapter) Delta(ctx context.Context, out channels.Outbound, text string) {
	a.push(out, sseEvent{name: "delta", data: map[string]string{"text": text}, text: true})
}

// push logs ev in the stream of every request out answers; it never waits
// for a client.
func (a *Adapter) push(out channels.Outbound, ev sseEvent) {
	for _, id := range answered(out) {
		if l := a.logOf(id); l != nil {
			l.add(ev)
		}
	}
}

// ChatRequest is the body of POST /api/agents/{id}/chat.
type ChatRequest struct {
	Message   string      `json:"message"`
	SessionID string      `json:"sessionId,omitempty"`
	Context   string      `json:"context,omitempty"`
	Images    []ChatImage `json:"images,omitempty"`
	// RequestID, a lower-case UUID the client chose, makes the request
	// safe to send again: a retry after a connection lost before the
	// answer's headers is the same message (the journal drops it as a
	// duplicate) and is answered with that turn's stream (a new chat: in
	// the same new conversation).
	RequestID string `json:"requestId,omitempty"`
	// Choice is a press of a choice button (choices.go): its label is
	// the message; it needs SessionID and takes no RequestID (the
	// question's id makes it safe to send again).
	Choice *ChatChoice `json:"choice,omitempty"`
}

// ServeChat handles POST /api/agents/{id}/chat (the caller checked auth).
func (a *Adapter) ServeChat(w http.ResponseWriter, r *http.Request) {
	agent := agentOf(r)
	var req ChatRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBody))
			return
		}
		if errors.Is(err, io.EOF) {
			WriteError(w, http.StatusBadRequest, "bad JSON: empty body")
			return
		}
		WriteError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	if dec.More() {
		WriteError(w, http.StatusBadRequest, "bad JSON: trailing data after the object")
		return
	}
	if req.Choice != nil {
		if req.RequestID != "" || len(req.Images) > 0 || req.Context != "" {
			WriteError(w, http.StatusBadRequest, "choice: takes no requestId, images or context")
			return
		}
		req.Message = req.Choice.Label
	}
	if strings.TrimSpace(req.Message) == "" && len(req.Images) == 0 {
		WriteError(w, http.StatusBadRequest, "message: must not be empty")
		return
	}
	atts, err := imageAttachments(req.Images)
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.RequestID != "" && !canonicalUUID(req.RequestID) {
		WriteError(w, http.StatusBadRequest, fmt.Sprintf("requestId: %q is not a lower-case UUID", req.RequestID))
		return
	}
	sender := a.senderOf(w, r)
	t := turnID{peer: uuid.NewString(), msg: uuid.NewString()}
	if req.RequestID != "" {
		// A new chat's conversation follows from the request (and its
		// sender: another sender's request id names another chat), so a
		// retry lands in the same one.
		t.peer = uuid.NewSHA1(retryNamespace, []byte(sender+"\x00"+req.RequestID)).String()
		t.msg = req.RequestID
	}
	if req.SessionID != "" {
		if a.opts.Lookup == nil {
			WriteError(w, http.StatusNotFound, "session "+req.SessionID+" not found")
			return
		}
		p, ok, err := a.opts.Lookup(agent, req.SessionID)
		if err != nil {
			a.log.Warn("session lookup failed", zap.String("session_id", req.SessionID), zap.Error(err))
			WriteError(w, http.StatusServiceUnavailable, "session "+req.SessionID+
				": could not be read (storage unavailable); try again later")
			return
		}
		if !ok {
			WriteError(w, http.StatusNotFound, "session "+req.SessionID+" not found")
			return
		}
		t.peer = p
	}
	if req.Choice != nil {
		msg, status, err := a.pressInbound(req.Choice, req.SessionID, t.peer)
		if err != nil {
			WriteError(w, status, err.Error())
			return
		}
		t.msg = msg
	}
	a.mu.Lock()
	h, stopped := a.handler, a.stopped
	a.mu.Unlock()
	if h == nil {
		// Not taken: the client may send it again, to the next process.
		w.Header().Set("Retry-After", "1")
		if stopped {
			WriteError(w, http.StatusServiceUnavailable, "message not accepted: the gateway is shutting down; try again in a moment")
			return
		}
		WriteError(w, http.StatusServiceUnavailable, "message not accepted: the gateway is starting; try again in a moment")
		return
	}
	text := req.Message
	if req.Context != "" {
		text = req.Context + "\n\n" + text
	}
	in := inboundOf(agent, t)
	in.SenderName, in.Mentioned, in.Text, in.Attachments, in.Time = "web", true, text, atts, a.now()
	in.Principal = sender
	in.Press = req.Choice != nil
	if in.Press {
		in.PressAsked, _ = channels.ChoiceIssued(req.Choice.Data)
	}
	l, created := a.openLog(t, agent, sender, req.SessionID, false)
	switch {
	case l == nil:
		WriteError(w, http.StatusConflict, "requestId "+req.RequestID+" was sent before for another chat or sender")
		return
	case !created:
		// A retry of a request this process took: its stream.
		w.Header().Set("X-Turn-Id", t.String())
		a.resume(w, r, agent, t, position{n: -1})
		return
	}
	if err := h(r.Context(), in); err != nil {
		a.dropLog(l)
		refused := refusal(l)
		// A retry of this request may be reading l already (it came while
		// this one was being taken): end its stream, or it waits forever.
		l.finish(channels.Outbound{Failed: true, Text: notTaken}, time.Now())
		if errors.Is(err, channels.ErrDuplicate) && (req.RequestID != "" || req.Choice != nil) {
			// A retry of a request taken before (by a process since
			// restarted): the turn's reply, as a resume gets it.
			w.Header().Set("X-Turn-Id", t.String())
			a.resume(w, r, agent, t, position{n: -1})
			return
		}
		if errors.Is(err, channels.ErrRejected) {
			WriteError(w, http.StatusForbidden, refused)
			return
		}
		if req.Choice != nil && errors.Is(err, channels.ErrChoiceExpired) {
			// A question of a session since reset (the dispatcher's
			// verdict): the page draws it expired.
			WriteError(w, http.StatusForbidden, channels.PressExpiredText)
			return
		}
		a.log.Warn("chat not accepted", zap.Error(err))
		if errors.Is(err, channels.ErrUnavailable) {
			WriteError(w, http.StatusServiceUnavailable, "message not accepted: storage unavailable ("+err.Error()+"); try again later")
			return
		}
		WriteError(w, http.StatusServiceUnavailable, "message not accepted, try again")
		return
	}
	w.Header().Set("X-Turn-Id", t.String())
	s := startSSE(w, a.ended)
	s.event(eventID(t, 0), "turn", map[string]string{"turnId": t.String()})
	s.live(r.Context(), l, 0)
}

// retryNamespace derives the conversation of a new chat sent with a
// request id (ChatRequest.RequestID).
var retryNamespace = uuid.MustParse("0b5c3f4e-2d1a-4c8e-9f67-5a4b3c2d1e0f")

// senderOf is the sender identity of r ("" without Options.Identity).
func (a *Adapter) senderOf(w http.ResponseWriter, r *http.Request) string {
	if a.opts.Identity == nil {
		return ""
	}
	return a.opts.Identity.Of(w, r)
}

// agentOf is the agent id of r's path, lower-cased as the API matches it
// (a turn posted to /api/agents/MAIN is agent main's, wherever it is read).
func agentOf(r *http.Request) string { return strings.ToLower(r.PathValue("id")) }

// inboundOf is the inbound message of turn t to agent, as far as its ids
// go (the journal record and the route).
func inboundOf(agent string, t turnID) channels.Inbound {
	return channels.Inbound{
		Address: channels.Address{Channel: Name, AccountID: "default", ChatID: t.peer}, Agent: agent,
		MessageID: t.msg, ChatType: channels.Direct, SenderID: t.peer, CaseSensitive: true,
	}
}

// WriteError writes a JSON error body {"error": msg} with status code.
func WriteError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// notTaken ends the stream of a retry that was reading the log of a
// request whose taking then failed.
const notTaken = "This message was not taken; send it again."

// refusal is the error text of a refused chat: the notice the handler
// sent with the refusal (a rate limit's "Slow down: try again in 12 s.",
// the access policy's reply), else "message refused".
func refusal(l *turnLog) string {
	if _, out, _ := l.read(0); out != nil && out.Text != "" {
		return "message refused: " + out.Text
	}
	return "message refused"
}
