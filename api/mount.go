package api

import "net/http"

// Mount serves h at path without bearer auth and without the Host, Origin
// and content-type checks; it is for endpoints that authenticate
// themselves (the Telegram webhook checks its secret token) and are called
// by a platform through a proxy under the public host name. Call it before
// the server starts.
func (s *Server) Mount(path string, h http.Handler) {
	s.mux.Handle("POST "+path, h)
	s.mounted[path] = true
}
