// Package httpclient is the daemon's default HTTP client for the APIs it
// calls many times at once (the Telegram Bot API, model providers):
// net/http's default transport keeping enough idle connections per host
// that concurrent turns reuse them instead of dialling one per call.
package httpclient

import (
	"net/http"
	"time"
)

// IdleConnsPerHost is how many idle keep-alive connections a client from
// New keeps to one host. net/http's default is 2: with more turns than
// that calling an API at once, every call past the second found no idle
// connection and the one it dialled was closed after it (a TCP, and in
// production a TLS, handshake per call; issue 21's profile of the daemon
// showed the dialling as its largest avoidable cost).
const IdleConnsPerHost = 64

// New is net/http's default transport (proxy from the environment, dial
// and TLS timeouts, HTTP/2) keeping IdleConnsPerHost idle connections per
// host instead of 2. No Timeout: each call carries a context deadline.
func New() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = IdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, 4*IdleConnsPerHost)
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}
