package gatewayd

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// governed serves h on a loopback listener through a governor of max
// connections (perClient per client off loopback), with header and idle
// timeouts far longer than the test, so only the governor can make room.
func governed(t *testing.T, h http.Handler, max, perClient int) (*connGovernor, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, httpLimits{ReadHeader: 5 * time.Minute, Read: 5 * time.Minute, Write: 5 * time.Minute,
		Idle: 5 * time.Minute, MaxHeaderBytes: 4 << 10})
	g := newConnGovernor(max, perClient)
	g.install(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(g.listener(ln))
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return g, ln.Addr().String()
}

func healthz() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	return mux
}

// TestConnectionWallLetsProbesIn is issue 22's "513 connections" attack
// at a cap of 8: silent sockets, sockets trickling their headers and an
// idle keep-alive connection fill the cap, and a health probe is still
// answered at once — the connection waiting longest makes room — where
// before it waited in the kernel's backlog until a slow socket's header
// timeout (minutes here). Connections serving a request are never cut:
// when all are, the newcomer gets a 503.
func TestConnectionWallLetsProbesIn(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", healthz())
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = io.WriteString(w, "done")
	})
	g, addr := governed(t, mux, 8, 8)
	var attack []net.Conn
	for i := range 12 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if i%3 == 1 {
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ") // never ends its headers
		}
		attack = append(attack, c)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		res, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s behind the wall: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("healthz behind the wall: %d %q", code, body)
	}
	if n := g.open(); n > 8 {
		t.Errorf("%d connections open, cap 8", n)
	}
	// The oldest attackers were closed to make room.
	closed := 0
	for _, c := range attack[:4] {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err == nil {
			closed++
		}
	}
	if closed == 0 {
		t.Error("none of the oldest silent connections was closed")
	}
	if got := testutil.ToFloat64(g.evicted); got < 1 {
		t.Errorf("evicted counter %v", got)
	}

	// Fill the cap with requests being served: none is cut, the next
	// connection is refused with a 503.
	results := make(chan int, 8)
	for range 8 {
		go func() {
			res, err := (&http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr + "/slow")
			if err != nil {
				results <- 0
				return
			}
			res.Body.Close()
			results <- res.StatusCode
		}()
	}
	waitUntil(t, 30*time.Second, "8 requests serving", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		n := 0
		for c := range g.conns {
			if c.serving > 0 {
				n++
			}
		}
		return n == 8
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a connection past a cap of serving requests: %v %v", res, err)
	}
	close(release)
	for range 8 {
		if code := <-results; code != http.StatusOK {
			t.Errorf("a request being served was cut: status %d", code)
		}
	}
	if got := testutil.ToFloat64(g.refused); got != 1 {
		t.Errorf("refused counter %v, want 1", got)
	}
}

// remoteConn is a connection from a given client address.
type remoteConn struct {
	net.Conn
	addr net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.addr }

// TestConnectionCapPerClient: one address off loopback holds at most
// perClient connections (a newcomer of it replaces its own oldest), and
// cannot push out another client's; loopback is exempt.
func TestConnectionCapPerClient(t *testing.T) {
	g := newConnGovernor(10, 2)
	from := func(ip string) *govConn {
		t.Helper()
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		go func() { _, _ = io.Copy(io.Discard, b) }() // a refusal's 503 is read
		return g.admit(remoteConn{Conn: a, addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 1}})
	}
	other := from("192.0.2.9")
	a1, a2 := from("198.51.100.7"), from("198.51.100.7")
	if other == nil || a1 == nil || a2 == nil {
		t.Fatal("connections under the caps refused")
	}
	g.serving(a2, 1) // a2 is serving a request
	a3 := from("198.51.100.7")
	if a3 == nil {
		t.Fatal("a third connection of one client refused while its first was idle")
	}
	g.mu.Lock()
	_, a1Open := g.conns[a1]
	_, otherOpen := g.conns[other]
	n := g.byClient["198.51.100.7"]
	g.mu.Unlock()
	if a1Open || !otherOpen || n != 2 {
		t.Errorf("after the client's third: its first open %v, the other client's open %v, client holds %d (want false, true, 2)", a1Open, otherOpen, n)
	}
	g.serving(a3, 1)
	if c := from("198.51.100.7"); c != nil {
		t.Error("a connection past the client's cap admitted while all of its connections serve")
	}
	for range 7 {
		if from("127.0.0.1") == nil {
			t.Fatal("a loopback connection refused under the global cap")
		}
	}
	if n := g.open(); n != 10 {
		t.Errorf("%d open, want 10", n)
	}
}
