package main

import (
	"net"
	"net/http"
	"sync"
	"time"

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

// limitListener accepts at most n connections at once; further clients
// wait in the kernel's backlog until one closes.
func limitListener(l net.Listener, n int) net.Listener {
	return &limitedListener{Listener: l, sem: make(chan struct{}, n)}
}

type limitedListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
