package telegramtest

import (
	"context"
	"net/http"
	"strings"
)

// Several clients of one fake (replicas of a daemon) are told apart by the
// API root each is given: URL + "/via/<tag>" is the same Bot API, and
// what a client sends through it is recorded with Sent.Via = tag.

// viaKey is the context key of a request's via tag.
type viaKey struct{}

// Via is the API root that records what a client sends under tag (a path
// segment: no "/").
func (s *Server) Via(tag string) string { return s.URL + "/via/" + tag }

// stripVia removes a leading /via/<tag> from r's path and carries tag in
// its context.
func stripVia(r *http.Request) *http.Request {
	rest, ok := strings.CutPrefix(r.URL.Path, "/via/")
	if !ok {
		return r
	}
	tag, path, ok := strings.Cut(rest, "/")
	if !ok {
		return r
	}
	r = r.WithContext(context.WithValue(r.Context(), viaKey{}, tag))
	r.URL.Path = "/" + path
	return r
}

// viaOf is the via tag of r ("" for the plain API root).
func viaOf(r *http.Request) string {
	tag, _ := r.Context().Value(viaKey{}).(string)
	return tag
}
