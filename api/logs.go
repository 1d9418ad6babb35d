package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gateway/gateway/internal/logring"
)

// Follow keep-alive and write window: a quiet daemon still writes an
// empty line now and then, so the connection and its deadline stay fresh.
const (
	logsKeepAlive   = 15 * time.Second
	logsWriteWindow = time.Minute
	logsMaxLines    = logring.DefaultSize
)

// logsRoutes serves GET /api/logs?n=200&follow=1: the daemon's most recent
// log lines as JSON lines (oldest first), then, with follow, every new
// line until the client goes or the daemon shuts down (EndStreams). A
// follower that falls behind gets a line saying how many it lost.
func (s *Server) logsRoutes() {
	s.allow("/api/logs", "GET")
	s.mux.Handle("GET /api/logs", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Logs == nil {
			writeError(w, http.StatusNotFound, "this daemon keeps no log lines")
			return
		}
		n := 200
		if v := r.URL.Query().Get("n"); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				writeError(w, http.StatusBadRequest, "n: want a number of lines >= 0")
				return
			}
			n = min(i, logsMaxLines)
		}
		follow := r.URL.Query().Get("follow") == "1" || r.URL.Query().Get("follow") == "true"
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		if !follow {
			for _, l := range s.opts.Logs.Last(n) {
				_, _ = w.Write(l)
			}
			return
		}
		recent, f := s.opts.Logs.Follow(n)
		defer f.Stop()
		rc := http.NewResponseController(w)
		write := func(b []byte) bool {
			_ = rc.SetWriteDeadline(time.Now().Add(logsWriteWindow))
			if _, err := w.Write(b); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		w.WriteHeader(http.StatusOK)
		for _, l := range recent {
			if !write(l) {
				return
			}
		}
		if !write(nil) {
			return
		}
		tick := time.NewTicker(logsKeepAlive)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-s.streamsEnd:
				return
			case l := <-f.Lines():
				if d := f.Dropped(); d > 0 {
					note := fmt.Sprintf(`{"level":"warn","msg":"gateway logs: %d lines lost: this follower fell behind"}`+"\n", d)
					if !write([]byte(note)) {
						return
					}
				}
				if !write(l) {
					return
				}
			case <-tick.C:
				if !write([]byte("\n")) {
					return
				}
			}
		}
	})))
}
