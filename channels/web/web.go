package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// (peer) id it belongs to; nil disables continuing by session id.
	Lookup func(agentID, sessionID string) (peer string, ok bool)
}

// Adapter is the web channel. Create it with New.
type Adapter struct {
	opts Options
	log  *zap.Logger

	mu      sync.Mutex
	handler channels.Handler                  // guarded by mu; set while Run runs
	waiters map[string]chan channels.Outbound // guarded by mu; by inbound message id
	deltas  map[string]chan sseEvent          // guarded by mu; deltas and tool calls

	accepting     chan struct{} // closed once Run has installed the handler
	acceptingOnce sync.Once
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
		waiters: map[string]chan channels.Outbound{}, deltas: map[string]chan sseEvent{},
		accepting: make(chan struct{})}
}

// Accepting is closed once Run has installed its handler: from then on a
// chat request is taken instead of answered 503 "not ready". The daemon
// waits for it before it reports ready.
func (a *Adapter) Accepting() <-chan struct{} { return a.accepting }

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
	a.handler = nil
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

// Send delivers the final reply to every request it answers that still
// waits. A request whose client went away is not an error: the reply is in
// the session's transcript.
func (a *Adapter) Send(ctx context.Context, out channels.Outbound) error {
	for _, id := range answered(out) {
		a.mu.Lock()
		ch := a.waiters[id]
		a.mu.Unlock()
		if ch == nil {
			continue
		}
		select {
		case ch <- out:
		default:
		}
	}
	return nil
}

// Delta streams a piece of the reply to every request it answers.
func (a *Adapter) Delta(ctx context.Context, out channels.Outbound, text string) {
	a.push(ctx, out, sseEvent{name: "delta", data: map[string]string{"text": text}, text: true})
}

// push hands ev to the stream of every request out answers.
func (a *Adapter) push(ctx context.Context, out channels.Outbound, ev sseEvent) {
	for _, id := range answered(out) {
		a.mu.Lock()
		ch := a.deltas[id]
		a.mu.Unlock()
		if ch == nil {
			continue
		}
		select {
		case ch <- ev:
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second): // a stalled client must not stall the run
		}
	}
}

// ChatRequest is the body of POST /api/agents/{id}/chat.
type ChatRequest struct {
	Message   string      `json:"message"`
	SessionID string      `json:"sessionId,omitempty"`
	Context   string      `json:"context,omitempty"`
	Images    []ChatImage `json:"images,omitempty"`
}

// ServeChat handles POST /api/agents/{id}/chat (the caller checked auth).
func (a *Adapter) ServeChat(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("id")
	var req ChatRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBody))
			return
		}
		WriteError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	if dec.More() {
		WriteError(w, http.StatusBadRequest, "bad JSON: trailing data after the object")
		return
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
	peer := uuid.NewString()
	if req.SessionID != "" {
		if a.opts.Lookup == nil {
			WriteError(w, http.StatusNotFound, "session "+req.SessionID+" not found")
			return
		}
		p, ok := a.opts.Lookup(agent, req.SessionID)
		if !ok {
			WriteError(w, http.StatusNotFound, "session "+req.SessionID+" not found")
			return
		}
		peer = p
	}
	a.mu.Lock()
	h := a.handler
	a.mu.Unlock()
	if h == nil {
		WriteError(w, http.StatusServiceUnavailable, "not ready")
		return
	}
	text := req.Message
	if req.Context != "" {
		text = req.Context + "\n\n" + text
	}
	in := channels.Inbound{
		Address: channels.Address{Channel: Name, AccountID: "default", ChatID: peer}, Agent: agent, MessageID: uuid.NewString(), ChatType: channels.Direct, SenderID: peer, SenderName: "web",
		CaseSensitive: true, Mentioned: true, Text: text, Attachments: atts, Time: time.Now(),
	}
	done := make(chan channels.Outbound, 1)
	deltas := make(chan sseEvent, 64)
	a.mu.Lock()
	a.waiters[in.MessageID], a.deltas[in.MessageID] = done, deltas
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiters, in.MessageID)
		delete(a.deltas, in.MessageID)
		a.mu.Unlock()
	}()
	if err := h(r.Context(), in); err != nil {
		if errors.Is(err, channels.ErrRejected) {
			WriteError(w, http.StatusForbidden, refusal(done))
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
	a.stream(w, r, deltas, done)
}

// The chat stream outlives the server's write timeout: each write gets
// sseWriteWindow, and a comment line every sseKeepAlive keeps proxies and
// the deadline alive while the model thinks.
const (
	sseWriteWindow = time.Minute
	sseKeepAlive   = 15 * time.Second
)

func (a *Adapter) stream(w http.ResponseWriter, r *http.Request, deltas chan sseEvent, done chan channels.Outbound) {
	fl, _ := w.(http.Flusher)
	rc := http.NewResponseController(w)
	extend := func() { _ = rc.SetWriteDeadline(time.Now().Add(sseWriteWindow)) }
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	extend()
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	streamed := false
	for {
		extend()
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			fmt.Fprint(w, ": ping\n\n")
			if fl != nil {
				fl.Flush()
			}
		case ev := <-deltas:
			streamed = streamed || ev.text
			writeEvent(w, ev.name, ev.data)
			if fl != nil {
				fl.Flush()
			}
		case out := <-done:
			for drained := false; !drained; {
				select {
				case ev := <-deltas:
					streamed = streamed || ev.text
					writeEvent(w, ev.name, ev.data)
				default:
					drained = true
				}
			}
			if out.Failed {
				writeEvent(w, "error", map[string]string{"message": out.Text})
			} else if !streamed && out.Text != "" {
				writeEvent(w, "delta", map[string]string{"text": out.Text})
			}
			writeEvent(w, "done", map[string]any{"sessionId": out.SessionID, "tokenEstimate": out.TokenEstimate})
			if fl != nil {
				fl.Flush()
			}
			return
		}
	}
}

func writeEvent(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
}

// WriteError writes a JSON error body {"error": msg} with status code.
func WriteError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// refusal is the error text of a refused chat: the notice the handler
// sent with the refusal (a rate limit's "Slow down: try again in 12 s.",
// the access policy's reply), else "message refused".
func refusal(done chan channels.Outbound) string {
	select {
	case out := <-done:
		if out.Text != "" {
			return "message refused: " + out.Text
		}
	default:
	}
	return "message refused"
}
