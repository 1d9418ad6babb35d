package telegram

import (
	"net/http"
	"time"
)

// idleConnsPerHost is how many idle keep-alive connections the default
// client keeps to the Bot API. net/http's default is 2: with more turns
// than that sending (replies, typing, edits) at once, every call past the
// second found no idle connection and the one it dialled was closed after
// it, a TCP and TLS handshake per call (issue 21's profile of the daemon
// showed the dialling as its largest avoidable cost).
const idleConnsPerHost = 64

// newHTTPClient is the adapter's default client (Options.HTTPClient nil):
// net/http's default transport (proxy from the environment, dial and TLS
// timeouts) keeping idleConnsPerHost idle connections to a host. No
// Timeout: each call carries a context deadline.
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = idleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, 2*idleConnsPerHost)
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}
