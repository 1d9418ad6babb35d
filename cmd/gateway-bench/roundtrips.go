package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// Round trips to the database, counted on the wire (-roundtrips): the
// daemons connect through dbProxy, a PostgreSQL protocol proxy on a Unix
// socket that forwards bytes unchanged and counts the messages after which
// a client waits for the server: each Sync (the extended protocol ends
// every pgx query, and every batch or pipeline, with one) and each simple
// Query (BEGIN, COMMIT, statements without arguments). A batch is one
// round trip; a statement pgx prepares on first use is two the first time.
// Nothing in the daemon changes, every connection counts (the pool, the
// advisory-lock and LISTEN connections), and the cost (one more hop per
// round trip) is paid only when asked for.

// Protocol codes of the untyped messages a connection may start with.
const (
	sslRequestCode   = 80877103
	gssEncryptCode   = 80877104
	startupHeaderLen = 8 // int32 length + int32 protocol version or request code
	typedHeaderLen   = 5 // type byte + int32 length
)

// frontendCounter parses a client's byte stream (startup, then typed
// messages) as it is written and counts the round trips in it. One per
// connection; not safe for concurrent use.
type frontendCounter struct {
	trips   *atomic.Int64
	typed   bool // past the startup message: every message has a type byte
	hdr     [startupHeaderLen]byte
	nhdr    int
	skip    int64 // body bytes of the current message still to come
	badSize bool  // a length field made no sense: stop parsing
}

// Write implements io.Writer; it never fails.
func (c *frontendCounter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !c.badSize {
		if c.skip > 0 {
			k := min(int64(len(p)), c.skip)
			c.skip -= k
			p = p[k:]
			continue
		}
		want := startupHeaderLen
		if c.typed {
			want = typedHeaderLen
		}
		k := copy(c.hdr[c.nhdr:want], p)
		c.nhdr += k
		p = p[k:]
		if c.nhdr < want {
			break
		}
		c.nhdr = 0
		c.header()
	}
	return n, nil
}

// header reads the complete header in c.hdr.
func (c *frontendCounter) header() {
	if !c.typed {
		size := int64(binary.BigEndian.Uint32(c.hdr[0:4]))
		code := binary.BigEndian.Uint32(c.hdr[4:8])
		c.skip = size - startupHeaderLen
		// After an SSL or GSS encryption request (refused: the client
		// talks to a Unix socket) comes the real startup message.
		c.typed = code != sslRequestCode && code != gssEncryptCode
		c.badSize = c.skip < 0
		return
	}
	switch c.hdr[0] {
	case 'S', 'Q': // Sync, simple Query
		c.trips.Add(1)
	}
	c.skip = int64(binary.BigEndian.Uint32(c.hdr[1:5])) - 4
	c.badSize = c.skip < 0
}

// dbProxy listens on a Unix socket in its own directory and forwards every
// connection to the PostgreSQL server, counting round trips.
type dbProxy struct {
	dir      string // the socket's directory: host=dir in a URL
	port     string
	network  string // of the server: "unix" or "tcp"
	upstream string
	ln       net.Listener
	trips    atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex // guards conns and closed
	conns    map[net.Conn]struct{}
	closed   bool
}

// startDBProxy starts a proxy to the server dbURL names and returns it
// with the URL to give the daemons instead (same database, user and
// options; the host is the proxy's socket directory).
func startDBProxy(dbURL string) (*dbProxy, string, error) {
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		return nil, "", fmt.Errorf("db proxy: parse url: %w", err)
	}
	p := &dbProxy{port: strconv.Itoa(int(cfg.Port)), conns: map[net.Conn]struct{}{}}
	if filepath.IsAbs(cfg.Host) {
		p.network, p.upstream = "unix", filepath.Join(cfg.Host, ".s.PGSQL."+p.port)
	} else {
		p.network, p.upstream = "tcp", net.JoinHostPort(cfg.Host, p.port)
	}
	if p.dir, err = os.MkdirTemp("", "gateway-bench-pg-"); err != nil {
		return nil, "", fmt.Errorf("db proxy: socket dir: %w", err)
	}
	if p.ln, err = net.Listen("unix", filepath.Join(p.dir, ".s.PGSQL."+p.port)); err != nil {
		os.RemoveAll(p.dir)
		return nil, "", fmt.Errorf("db proxy: listen: %w", err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		p.Close()
		return nil, "", fmt.Errorf("db proxy: parse url: %w", err)
	}
	u.Host = ""
	q := u.Query()
	q.Set("host", p.dir)
	q.Set("port", p.port)
	q.Set("sslmode", "disable") // a Unix socket: no TLS to parse around
	u.RawQuery = q.Encode()
	p.wg.Go(p.accept)
	return p, u.String(), nil
}

// RoundTrips is the count so far over every connection.
func (p *dbProxy) RoundTrips() int64 { return p.trips.Load() }

// Close stops accepting, cuts the connections still open and waits for
// their copies to end.
func (p *dbProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	os.RemoveAll(p.dir)
}

func (p *dbProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// track adds the connections of one client to the open ones; false means
// the proxy is closed.
func (p *dbProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return !p.closed
}

func (p *dbProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *dbProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial(p.network, p.upstream)
	if err != nil {
		return
	}
	defer server.Close()
	defer p.untrack(client, server)
	if !p.track(client, server) {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(client, server)
		client.Close()
	}()
	// Either side going away ends both copies.
	_, _ = io.Copy(server, io.TeeReader(client, &frontendCounter{trips: &p.trips}))
	server.Close()
	<-done
}

// roundTripsPerMessage renders the round trips between two readings per
// message of n.
func roundTripsPerMessage(before, after int64, n int) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(after-before)/float64(n))
}
