package llm

import (
	"net/http"
	"time"
)

// IdleConnsPerHost is how many idle keep-alive connections a provider's
// default client keeps to its API host. net/http's default is 2: with more
// turns than that calling a provider at once, every call past the second
// found no idle connection and the one it dialled was closed after it (a
// TCP, and in production a TLS, handshake per model call; issue 21's
// profile showed the dialling as the daemon's largest avoidable cost).
const IdleConnsPerHost = 64

// NewHTTPClient is a provider's default client: net/http's default
// transport (proxy from the environment, dial and TLS timeouts, HTTP/2)
// that keeps IdleConnsPerHost idle connections per host instead of 2. No
// Timeout: each call carries a context deadline.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = IdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, 4*IdleConnsPerHost)
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}
