package gatewayd

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowClientsCannotHoldTheServer: clients that trickle their headers,
// or never send the body they announced, are cut off by the server's
// timeouts (or make room for newcomers: connlimit_test.go); /healthz
// answers after them.
func TestSlowClientsCannotHoldTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limits := httpLimits{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond,
		Write: time.Second, Idle: time.Second, MaxHeaderBytes: 4 << 10}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("POST /body", func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		if err == nil {
			t.Error("a body that never came was read to its end")
		}
	})
	srv := newHTTPServer(mux, limits)
	g := newConnGovernor(4, 4)
	g.install(srv)
	go func() { _ = srv.Serve(g.listener(ln)) }()
	defer srv.Close()
	addr := ln.Addr().String()

	var slow []net.Conn
	for i := range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		if i%2 == 0 {
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ") // never ends its headers
		} else {
			_, _ = io.WriteString(c, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc")
		}
	}
	for i, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("slow client %d not cut off by the server: %v", i, err)
		}
		c.Close()
	}
	// A well-behaved client is served after them (the cap was full).
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("healthz %q", b)
	}
	// Oversized headers are refused.
	big, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	_, _ = io.WriteString(big, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\n\r\n")
	_ = big.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(big), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("oversized headers: %v %v", resp, err)
	}
}
