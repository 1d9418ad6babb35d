package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/logring"
	"github.com/gateway/gateway/internal/mediastore"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// MaxBody is the largest request body any route accepts (1 MiB); larger
// bodies are answered with 413.
const MaxBody = 1 << 20

// Options wires the API.
type Options struct {
	Sessions sessions.Backend
	Runner   *agents.Runner // nil: compact answers 503; else PATCH model must be one of its Models
	Web      ChatHandler    // nil disables chat and the page
	Gatherer prometheus.Gatherer
	Logger   *zap.Logger
	// Token is required as "Authorization: Bearer <token>" when non-empty.
	Token string
	// Agents are the configured agent ids.
	Agents []string
	// Providers are the configured provider names; when set, PATCH model
	// must name one of them.
	Providers []string
	// Health reports a failure that keeps the daemon from accepting work
	// (the journal's storage); /readyz answers 503 while it is non-nil.
	Health func() error
	// AllowedHosts and AllowedOrigins extend the Host and Origin checks
	// (http.allowedHosts, http.allowedOrigins); PublicListener says the API
	// listens beyond loopback (any Host is then accepted unless
	// AllowedHosts is set).
	AllowedHosts   []string
	AllowedOrigins []string
	PublicListener bool
	// Serialise runs fn on the session's lane (nil: run directly).
	Serialise func(ctx context.Context, key routing.Key, fn func(ctx context.Context) error) error
	// Ended, when set, is told on the session's lane that a reset or a
	// delete ended key's session: the daemon stops the subagents it
	// started, as /new and /delete do in the chat.
	Ended func(ctx context.Context, key routing.Key) int
	// MCP reports the MCP servers' state (nil: none configured).
	MCP func() []mcp.Status
	// Status reports what the daemon is doing for GET /api/status, and
	// whether something is failing (the answer is then 503); nil: the
	// route answers 404.
	Status func(ctx context.Context) (status any, failing bool)
	// DeadLetters serves /api/deliveries/failed (nil: the routes answer
	// 404).
	DeadLetters DeadLetters
	// Jobs serves /api/jobs over Sessions (nil: the routes answer 404).
	Jobs *JobSettings
	// Logs holds the daemon's recent log lines for GET /api/logs (nil:
	// the endpoint answers 404).
	Logs *logring.Ring
	// Config returns the effective config with its secrets redacted for
	// GET /api/config (nil: the route answers 404).
	Config func() any
	// Pairing serves /api/pairing (nil: the routes answer 404).
	Pairing Pairing
	// Send delivers an operator's message into a session (nil: the route
	// answers 404).
	Send SendFunc
	// MemoryLimits are an agent's memory limits for the memory routes'
	// writes (nil: the defaults).
	MemoryLimits func(agentID string) sessions.MemoryLimits
	// Choices signs the web chat's choice buttons again for a session's
	// history (questions.go); nil: the history carries no questions.
	Choices *channels.ChoiceKeys
	// Media is the outbound media store GET /api/media/{sha256} serves
	// (media.go; nil: the route answers 404).
	Media *mediastore.Store
}

// ChatHandler serves the web chat's SSE endpoints (channels/web's Adapter):
// api mounts it without importing a channel adapter (internal/archtest).
type ChatHandler interface {
	// ServeChat is POST /api/agents/{id}/chat.
	ServeChat(w http.ResponseWriter, r *http.Request)
	// ServeTurn is GET /api/agents/{id}/chat/turns/{turn}: the rest of a
	// chat's reply for a client that reconnects (Last-Event-ID).
	ServeTurn(w http.ResponseWriter, r *http.Request)
	// EndStreams ends the chat streams still waiting (Server.EndStreams).
	EndStreams()
}

// Server is the HTTP handler. Create it with New.
type Server struct {
	opts    Options
	log     *zap.Logger
	mux     *http.ServeMux
	guarded http.Handler    // mux behind guard
	mounted map[string]bool // paths served by Mount, outside guard
	ready   atomic.Bool

	streamsEnd     chan struct{} // closed by EndStreams
	streamsEndOnce sync.Once
}

var _ http.Handler = (*Server)(nil)

// New builds the handler with every route.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux(), mounted: map[string]bool{},
		streamsEnd: make(chan struct{})}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
			return
		}
		if s.opts.Health != nil {
			if err := s.opts.Health(); err != nil {
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "degraded", "error": err.Error()})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	if opts.Gatherer != nil {
		s.mux.Handle("GET /metrics", s.auth(promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{})))
	}
	if opts.Web != nil {
		s.handle("POST /api/agents/{id}/chat", opts.Web.ServeChat)
		s.handle("GET /api/agents/{id}/chat/turns/{turn}", opts.Web.ServeTurn)
		s.allow("/api/agents/{id}/chat/turns/{turn}", "GET")
		s.mux.Handle("/", pageHandler())
	}
	s.routes()
	s.usageRoutes()
	s.mcpRoutes()
	s.statusRoutes()
	s.deliveryRoutes()
	s.jobRoutes()
	s.logsRoutes()
	s.configRoutes()
	s.pairingRoutes()
	s.memoryRoutes()
	s.mediaRoutes()
	// Anything else below /api/ is a JSON 404 (after auth, so an
	// unauthenticated caller learns nothing about the routes).
	s.mux.Handle("/api/", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path)
	})))
	s.guarded = s.guard(s.mux)
	return s
}

// SetReady flips /readyz (/healthz stays 200 while the process lives).
func (s *Server) SetReady(v bool) { s.ready.Store(v) }

// EndStreams ends the answers that stream until their client goes (GET
// /api/logs?follow=1) and the chat streams still waiting for a reply the
// shutdown left for the next start (their clients resume from it): the
// daemon calls it as its HTTP server shuts down, which otherwise waits for
// them until its deadline. Later streams end at once. Safe to call more
// than once.
func (s *Server) EndStreams() {
	s.streamsEndOnce.Do(func() { close(s.streamsEnd) })
	if s.opts.Web != nil {
		s.opts.Web.EndStreams()
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && s.mounted[r.URL.Path] {
		s.mux.ServeHTTP(w, r)
		return
	}
	s.guarded.ServeHTTP(w, r)
}

// handle registers an authenticated, agent-scoped, size-limited route.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.mux.Handle(pattern, s.auth(limitBody(s.agentOnly(h))))
}

// allow answers 405 with an Allow header for the other methods of path.
func (s *Server) allow(path string, methods ...string) {
	allowed := strings.Join(methods, ", ")
	s.mux.Handle(path, s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allowed)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use "+allowed)
	})))
}

func (s *Server) auth(h http.Handler) http.Handler {
	if s.opts.Token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			// Answer before any body is read, and do not wait for one.
			w.Header().Set("Connection", "close")
			w.Header().Set("WWW-Authenticate", `Bearer realm="gateway"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// limitBody refuses bodies larger than MaxBody: at once when
// Content-Length says so, else when reading passes the limit.
func limitBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBody {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		h.ServeHTTP(w, r)
	})
}

// agentOnly answers 404 for an agent id that is not configured.
func (s *Server) agentOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.ToLower(r.PathValue("id"))
		for _, a := range s.opts.Agents {
			if a == id {
				h.ServeHTTP(w, r)
				return
			}
		}
		writeError(w, http.StatusNotFound, "agent "+r.PathValue("id")+" not found")
	})
}

// decodeJSON reads one JSON object into v strictly (unknown fields are
// errors). An empty body leaves v unchanged when allowEmpty. It writes the
// 400 or 413 answer itself and reports whether decoding succeeded.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			writeError(w, http.StatusBadRequest, "bad JSON: trailing data after the object")
			return false
		}
		return true
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBody))
	case errors.Is(err, io.EOF) && allowEmpty:
		return true
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "bad JSON: empty body")
	default:
		writeError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
	}
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes {"error": msg} with code.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
