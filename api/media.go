package api

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/internal/mediastore"
)

// GET /api/media/{sha256}: a file of an agent's reply (issue 23), from the
// outbound media store, for the web chat (which fetches it with the bearer
// token and shows pictures inline, other files as downloads). The name is
// the content's SHA-256, which only a reply tells; anything else is a 400.
// Pictures, sound and video are served as what their bytes are; every
// other file as application/octet-stream, for download. The page cannot
// be made to run a file: nosniff, and a sandboxing CSP.

func (s *Server) mediaRoutes() {
	if s.opts.Media == nil {
		return
	}
	s.mux.Handle("GET /api/media/{sum}", s.auth(http.HandlerFunc(s.serveMedia)))
	s.allow("/api/media/{sum}", "GET")
}

func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request) {
	sum := r.PathValue("sum")
	if !mediastore.Valid(sum) {
		writeError(w, http.StatusBadRequest, "media: "+sum+" is not a SHA-256 in lower-case hex")
		return
	}
	f, err := s.opts.Media.Open(sum)
	if errors.Is(err, mediastore.ErrNotFound) {
		writeError(w, http.StatusNotFound, "media: no such file (it may have been pruned)")
		return
	}
	if err != nil {
		s.log.Error("media not readable", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "media: not readable")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "media: not readable")
		return
	}
	var head [512]byte
	n, _ := io.ReadFull(f, head[:])
	ct := http.DetectContentType(head[:n])
	family, _, _ := strings.Cut(ct, "/")
	inline := (family == "image" && ct != "image/svg+xml") || family == "audio" || family == "video"
	if !inline {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, max-age=86400, immutable")
	if !inline {
		h.Set("Content-Disposition", "attachment")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		writeError(w, http.StatusInternalServerError, "media: not readable")
		return
	}
	http.ServeContent(w, r, "", fi.ModTime(), f)
}
