package openaitest

import (
	"time"
)

// Per-key concurrency: a test that derives a key from each request (a
// chat, a session) learns how many requests of one key the server was
// serving at once, from arrival to the end of the answer or the client
// going away. A daemon that runs one turn per session at a time never has
// two requests of one session's key in flight.

// KeyStats is what the server saw of one key.
type KeyStats struct {
	Requests    int
	MaxInFlight int
	// Overlaps lists each time a request arrived while another of its key
	// was in flight.
	Overlaps []Overlap
}

// Overlap is a request that arrived while others of its key were in
// flight.
type Overlap struct {
	At time.Time
	// Path is the arriving request's URL path and Others those of the
	// requests already in flight: clients given different base URLs
	// (Server.BaseURLVia) are told apart by them.
	Path   string
	Others []string
}

// keyState is the server's tracking of keys; guarded by Server.mu.
type keyState struct {
	fn       func(Request) string
	stats    map[string]*KeyStats
	inFlight map[string]map[int]string // key -> request number -> path
}

// SetKey makes the server track the requests of each key fn returns ("":
// not tracked). It resets what was tracked before.
func (s *Server) SetKey(fn func(Request) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keyState{fn: fn, stats: map[string]*KeyStats{}, inFlight: map[string]map[int]string{}}
}

// KeyStats returns a copy of what the server saw per key.
func (s *Server) KeyStats() map[string]KeyStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]KeyStats, len(s.keys.stats))
	for k, st := range s.keys.stats {
		c := *st
		c.Overlaps = append([]Overlap(nil), st.Overlaps...)
		out[k] = c
	}
	return out
}

// BaseURLVia is BaseURL under a path of its own: the server answers the
// same, and the requests record tag in their Path.
func (s *Server) BaseURLVia(tag string) string { return s.URL + "/via/" + tag + "/v1" }

// enterLocked counts request n (with path) of its key in flight and
// returns the function that ends it (to call without s.mu). s.mu must be
// held.
func (s *Server) enterLocked(n int, req Request) (exit func()) {
	if s.keys.fn == nil {
		return func() {}
	}
	key := s.keys.fn(req)
	if key == "" {
		return func() {}
	}
	st := s.keys.stats[key]
	if st == nil {
		st = &KeyStats{}
		s.keys.stats[key] = st
	}
	fl := s.keys.inFlight[key]
	if fl == nil {
		fl = map[int]string{}
		s.keys.inFlight[key] = fl
	}
	st.Requests++
	if len(fl) > 0 {
		o := Overlap{At: time.Now(), Path: req.Path}
		for _, p := range fl {
			o.Others = append(o.Others, p)
		}
		st.Overlaps = append(st.Overlaps, o)
	}
	fl[n] = req.Path
	st.MaxInFlight = max(st.MaxInFlight, len(fl))
	keys := &s.keys
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(keys.inFlight[key], n)
	}
}
