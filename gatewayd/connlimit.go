package gatewayd

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// connGovernor admits the API listener's connections (http.maxConnections
// and http.maxConnectionsPerClient; issue 22 item 4). A connection that
// would pass a cap takes the place of the connection of that scope that
// has waited longest without a request being served on it — one that has
// not finished sending its first request's headers (a slow or silent
// client) or sits idle between requests — which is closed. Only when every
// connection of the scope is serving a request is the newcomer refused (an
// HTTP 503, then closed): a request being served is never cut. So however
// many sockets idle or trickle, a health probe, an authenticated chat or a
// webhook delivery still gets in; before, the cap was one pool that held
// newcomers in the kernel's backlog until a slow socket timed out.
//
// The per-client cap applies to clients off loopback only: local tools
// (a proxy in front, the load generator) come from one address.
// Safe for concurrent use; install hooks it into the http.Server.
type connGovernor struct {
	max, perClient int
	evicted        prometheus.Counter
	refused        prometheus.Counter

	mu       sync.Mutex
	conns    map[*govConn]struct{} // guarded by mu
	byClient map[string]int        // guarded by mu: off-loopback connections per client address
}

// govConn is one admitted connection.
type govConn struct {
	net.Conn
	g      *connGovernor
	client string // "" on loopback: not counted per client
	// guarded by g.mu:
	serving int       // requests whose handler runs
	since   time.Time // when the connection last stopped serving (or opened)
	dropped bool      // released already (evicted)
	once    sync.Once // release on Close
}

// connKey is the context key under which ConnContext stores the *govConn.
type connKey struct{}

func newConnGovernor(max, perClient int) *connGovernor {
	return &connGovernor{max: max, perClient: perClient,
		evicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_http_connections_evicted_total",
			Help: "API connections closed to make room for a new one: idle, or not done sending their first request's headers."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_http_connections_refused_total",
			Help: "API connections refused with 503 because every connection of their scope was serving a request."}),
		conns: map[*govConn]struct{}{}, byClient: map[string]int{}}
}

// listener wraps l: Accept returns only admitted connections.
func (g *connGovernor) listener(l net.Listener) net.Listener { return govListener{Listener: l, g: g} }

type govListener struct {
	net.Listener
	g *connGovernor
}

func (l govListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.g.admit(c); gc != nil {
			return gc, nil
		}
	}
}

// install sets srv's ConnContext and ConnState and wraps its handler so
// the governor knows which connections are serving a request (a hijacked
// connection counts as serving for good).
func (g *connGovernor) install(srv *http.Server) {
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if gc, ok := c.(*govConn); ok && s == http.StateHijacked {
			g.serving(gc, 1)
		}
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if gc, ok := c.(*govConn); ok {
			return context.WithValue(ctx, connKey{}, gc)
		}
		return ctx
	}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gc, _ := r.Context().Value(connKey{}).(*govConn)
		if gc != nil {
			g.serving(gc, 1)
			defer g.serving(gc, -1)
		}
		next.ServeHTTP(w, r)
	})
}

func (g *connGovernor) serving(gc *govConn, d int) {
	g.mu.Lock()
	gc.serving += d
	if gc.serving == 0 {
		gc.since = time.Now()
	}
	g.mu.Unlock()
}

// admit registers c, closing the connection it replaces if a cap is
// reached, or refuses c (nil) when nothing of the scope can give way.
func (g *connGovernor) admit(c net.Conn) *govConn {
	client := ""
	if host, _, err := net.SplitHostPort(c.RemoteAddr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
			client = ip.String()
		}
	}
	gc := &govConn{Conn: c, g: g, client: client, since: time.Now()}
	g.mu.Lock()
	var victim *govConn
	switch {
	case client != "" && g.byClient[client] >= g.perClient:
		victim = g.waitingLongestLocked(client)
	case len(g.conns) >= g.max:
		victim = g.waitingLongestLocked("")
	}
	full := victim == nil && ((client != "" && g.byClient[client] >= g.perClient) || len(g.conns) >= g.max)
	if victim != nil {
		g.releaseLocked(victim)
	}
	if !full {
		g.conns[gc] = struct{}{}
		if client != "" {
			g.byClient[client]++
		}
	}
	g.mu.Unlock()
	if victim != nil {
		g.evicted.Inc()
		_ = victim.Conn.Close()
	}
	if full {
		g.refused.Inc()
		refuse(c)
		return nil
	}
	return gc
}

// waitingLongestLocked is the connection (of client, or of anyone for "")
// that has gone longest without serving a request; nil if every one is
// serving.
func (g *connGovernor) waitingLongestLocked(client string) *govConn {
	var best *govConn
	for c := range g.conns {
		if c.serving > 0 || (client != "" && c.client != client) {
			continue
		}
		if best == nil || c.since.Before(best.since) {
			best = c
		}
	}
	return best
}

func (g *connGovernor) releaseLocked(c *govConn) {
	if c.dropped {
		return
	}
	c.dropped = true
	delete(g.conns, c)
	if c.client != "" {
		if g.byClient[c.client]--; g.byClient[c.client] <= 0 {
			delete(g.byClient, c.client)
		}
	}
}

// Close closes the connection and gives its place back.
func (c *govConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.g.mu.Lock()
		c.g.releaseLocked(c)
		c.g.mu.Unlock()
	})
	return err
}

// refuse answers a connection no place was found for with a 503 and
// closes it, without waiting on a client that does not read.
func refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 21\r\n\r\ntoo many connections\n"))
	_ = c.Close()
}

// open is how many connections are admitted (tests).
func (g *connGovernor) open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}
