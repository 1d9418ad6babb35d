package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"go.uber.org/zap"
)

// startPprof serves Go's profiler on GATEWAY_PPROF_LISTEN (a loopback
// address such as 127.0.0.1:6060) until ctx ends; unset, it does nothing.
// It is for measuring the daemon under load (cmd/gateway-bench), never
// exposed on the API's listener.
func startPprof(ctx context.Context, log *zap.Logger) error {
	addr := os.Getenv("GATEWAY_PPROF_LISTEN")
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gateway: GATEWAY_PPROF_LISTEN: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("gateway: GATEWAY_PPROF_LISTEN: %q is not a loopback address", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: pprof listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	log.Info("profiler listening", zap.String("addr", addr))
	return nil
}
