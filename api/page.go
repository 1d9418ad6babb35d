package api

import (
	"embed"
	"io/fs"
	"net/http"
)

// static holds the web page: plain HTML, JS and CSS, no build step.
//
//go:embed static
var static embed.FS

// pageHandler serves the embedded page at / (index.html) and its assets.
// The page itself needs no token: it asks for one and sends it with every
// API call.
func pageHandler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("api: embedded static dir missing: " + err.Error()) // a build defect, not a runtime condition
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy",
			"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
