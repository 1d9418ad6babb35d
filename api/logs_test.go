package api

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/internal/logring"
)

// TestLogsFollowEndsAtShutdown: a follower of GET /api/logs?follow=1 (a
// `gateway logs -f` left open) ends when the daemon's HTTP server shuts
// down, so the shutdown does not wait for it until its deadline.
func TestLogsFollowEndsAtShutdown(t *testing.T) {
	ring := logring.New(0)
	log := zap.New(ring.Core(zap.InfoLevel))
	s := New(Options{Logs: ring})
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(s.EndStreams)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	log.Info("before the follower")
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/logs?follow=1&n=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("no first line: %v", lines.Err())
	}

	// A cap against a hang, far above a shutdown that does not wait for
	// the follower: without EndStreams, Shutdown waits for it to this cap.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a follower open: %v", err)
	}
	for lines.Scan() { // what was written before the end, then EOF
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("follower ended with %v, want EOF", err)
	}
	if err := <-served; err != http.ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}

	// A follower that comes after the end gets the recent lines and ends.
	s.EndStreams() // twice is fine
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/api/logs?follow=1&n=5", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "before the follower") {
		t.Fatalf("a late follower got %d %q", rec.Code, rec.Body.String())
	}
}
