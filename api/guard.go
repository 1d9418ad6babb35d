package api

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
)

// guard applies the checks every request passes before any route runs
// (SPEC §7): the Host header must name this server (DNS rebinding), a
// browser Origin must be the page's own or allowed (CSRF), and a request
// with a body must say it is JSON (a cross-site form cannot).
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusMisdirectedRequest, "host "+r.Host+" is not served here (add it to http.allowedHosts)")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusForbidden, "origin "+o+" is not allowed (add it to http.allowedOrigins)")
			return
		}
		if hasBody(r) && r.Method != http.MethodGet && r.Method != http.MethodHead {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				w.Header().Set("Connection", "close")
				writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

// loopbackNames are always accepted when the listener is on loopback.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

func (s *Server) hostAllowed(hostport string) bool {
	if slices.Contains(s.opts.AllowedHosts, "*") {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if slices.ContainsFunc(s.opts.AllowedHosts, func(a string) bool { return strings.EqualFold(a, host) }) {
		return true
	}
	if s.opts.PublicListener && len(s.opts.AllowedHosts) == 0 {
		return true // a token guards a public listener; names are the operator's business
	}
	return slices.Contains(loopbackNames, host)
}

func (s *Server) originAllowed(origin, host string) bool {
	// A browser sends the origin's scheme and host lower-case and no
	// path; the config may list it with capitals or a trailing slash.
	listed := func(a string) bool { return a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }
	if slices.ContainsFunc(s.opts.AllowedOrigins, listed) {
		return true
	}
	// Same origin: the page served by this API posting to it.
	for _, scheme := range []string{"http://", "https://"} {
		if rest, ok := strings.CutPrefix(origin, scheme); ok && strings.EqualFold(rest, host) {
			return true
		}
	}
	return false
}

// authorized reports whether r carries the bearer token. The scheme is
// case-insensitive (RFC 9110 §11.1); the token is compared in constant time.
func (s *Server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.opts.Token)) == 1
}
