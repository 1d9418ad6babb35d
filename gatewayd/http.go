package gatewayd

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
)

// httpLimits bound what a client can hold of the API's HTTP server (slow
// clients must not pin file descriptors and memory). The chat route streams
// for longer: it extends its own write deadline as it writes (channels/web).
type httpLimits struct {
	ReadHeader, Read, Write, Idle time.Duration
	MaxHeaderBytes                int
}

var defaultHTTPLimits = httpLimits{ReadHeader: 10 * time.Second, Read: 30 * time.Second,
	Write: 60 * time.Second, Idle: 120 * time.Second, MaxHeaderBytes: 64 << 10}

func newHTTPServer(h http.Handler, l httpLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeader,
		ReadTimeout:       l.Read,
		WriteTimeout:      l.Write,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

func listenLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	return err == nil && configs.IsLoopback(host)
}

// startPprof serves Go's profiler on GATEWAY_PPROF_LISTEN (a loopback
// address such as 127.0.0.1:6060) until stop is called; unset, it does
// nothing. It is for measuring the daemon under load (cmd/gateway-bench),
// never exposed on the API's listener.
func startPprof(log *zap.Logger) (stop func(), err error) {
	addr := os.Getenv("GATEWAY_PPROF_LISTEN")
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: GATEWAY_PPROF_LISTEN: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("gateway: GATEWAY_PPROF_LISTEN: %q is not a loopback address", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: pprof listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiler stopped", zap.Error(err))
		}
	}()
	log.Info("profiler listening", zap.String("addr", addr))
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
