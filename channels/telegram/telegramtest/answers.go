package telegramtest

import (
	"net/http"
	"slices"
	"time"
)

// Error answers: how the server answered each method's calls that failed
// (an injected Failure or its own 409 Conflict to a poll another poll
// ended), so a test counts the conflicts two pollers cause.

// ErrorAnswer is one call the server answered with an error.
type ErrorAnswer struct {
	Method string
	Code   int // the HTTP status, equal to error_code
	At     time.Time
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// recordAnswer records the answer to a call of method once its handler
// returned; a call the client gave up on (no status) is not an answer.
func (s *Server) recordAnswer(method string, w *statusWriter) {
	if w.status < 400 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errAnswers = append(s.errAnswers, ErrorAnswer{Method: method, Code: w.status, At: time.Now()})
	s.notifyLocked()
}

// ErrorAnswers returns the calls of method answered with error code, in
// order (a code of 0 matches every error).
func (s *Server) ErrorAnswers(method string, code int) []ErrorAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.errAnswers), func(a ErrorAnswer) bool {
		return a.Method != method || (code != 0 && a.Code != code)
	})
}
