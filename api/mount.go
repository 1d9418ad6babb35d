package api

import "net/http"

// Mount serves h at path without bearer auth; it is for endpoints that
// authenticate themselves (the Telegram webhook checks its secret token).
// Call it before the server starts.
func (s *Server) Mount(path string, h http.Handler) {
	s.mux.Handle("POST "+path, h)
}
