package configs

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// HTTP is the operator API listener (SPEC §7).
type HTTP struct {
	Listen    string `mapstructure:"listen"`
	Token     string `mapstructure:"token"`
	TokenFile string `mapstructure:"tokenFile"`
	// Web enables the web channel's chat endpoint and page.
	Web bool `mapstructure:"web"`
	// AllowedHosts are the Host header values accepted besides the loopback
	// names (DNS-rebinding defence); AllowedOrigins the browser Origins
	// accepted besides the API's own (CSRF defence). "*" allows any.
	AllowedHosts   []string `mapstructure:"allowedHosts"`
	AllowedOrigins []string `mapstructure:"allowedOrigins"`
	// MaxConnections caps concurrent client connections (default 512);
	// MaxConnectionsPerClient those of one client address off loopback
	// (0: 64, or MaxConnections if lower; see PerClientCap). A connection
	// past a cap replaces the one that has waited longest without a
	// request being served, or is refused with 503 when all are serving.
	MaxConnections          int `mapstructure:"maxConnections"`
	MaxConnectionsPerClient int `mapstructure:"maxConnectionsPerClient"`
}

// Validate checks the http section: a listen address off loopback needs
// a token.
func (h HTTP) Validate() error {
	if h.Listen != "" {
		host, port, err := net.SplitHostPort(h.Listen)
		if err != nil {
			return fmt.Errorf("http.listen: %q: %w", h.Listen, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("http.listen: port %q is not a number from 0 to 65535", port)
		}
		if !IsLoopback(host) && h.Token == "" {
			return fmt.Errorf("http.token: required when http.listen (%s) is not a loopback address", h.Listen)
		}
	}
	if h.Token != "" && strings.TrimSpace(h.Token) != h.Token {
		return fmt.Errorf("http.token: must not be blank or start or end with white space")
	}
	if h.MaxConnections < 1 || h.MaxConnections > 100000 {
		return fmt.Errorf("http.maxConnections: %d is not between 1 and 100000", h.MaxConnections)
	}
	if h.MaxConnectionsPerClient < 0 || h.MaxConnectionsPerClient > h.MaxConnections {
		return fmt.Errorf("http.maxConnectionsPerClient: %d is not between 0 (the default) and http.maxConnections (%d)", h.MaxConnectionsPerClient, h.MaxConnections)
	}
	for i, host := range h.AllowedHosts {
		if strings.TrimSpace(host) == "" || strings.ContainsAny(host, "/ ") {
			return fmt.Errorf("http.allowedHosts[%d]: %q is not a host name", i, host)
		}
	}
	for i, o := range h.AllowedOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return fmt.Errorf("http.allowedOrigins[%d]: %q is not an origin such as https://example.com", i, o)
		}
	}
	return nil
}

// DefaultConnectionsPerClient is http.maxConnectionsPerClient's default.
const DefaultConnectionsPerClient = 64

// PerClientCap is http.maxConnectionsPerClient with its default applied.
func (h HTTP) PerClientCap() int {
	if h.MaxConnectionsPerClient > 0 {
		return h.MaxConnectionsPerClient
	}
	return min(DefaultConnectionsPerClient, h.MaxConnections)
}

// IsLoopback reports whether host (from host:port) only listens on loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
