package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gateway/gateway/internal/secret"
)

// Defaults of a server's settings.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultConnectTimeout = 20 * time.Second
	// MaxTimeout bounds timeout and connectTimeout (a turn has its own
	// limit, agents.defaults.timeoutSeconds).
	MaxTimeout = time.Hour
)

// serverName is what a server may be called: its name prefixes its tools'
// names, so it is short and never holds the "__" separator.
var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// envName is a portable environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Config is the top-level `mcp:` section.
type Config struct {
	Servers map[string]ServerConfig `mapstructure:"servers"`
}

// ServerConfig is one `mcp.servers.<name>`: a stdio server (command, args,
// env, cwd) or a Streamable HTTP server (url, headers), never both.
type ServerConfig struct {
	// Enabled defaults to true; false keeps the entry without connecting.
	Enabled *bool `mapstructure:"enabled"`

	// Command is the program started for a stdio server (looked up in
	// PATH), with Args. Its environment is PATH, HOME, USER, LOGNAME,
	// SHELL, TERM, LANG, TZ and TMPDIR from the daemon's, plus Env and
	// EnvFiles (a variable's value read from a secret file when the server
	// starts). Cwd is its working directory (default: the daemon's).
	Command  string            `mapstructure:"command"`
	Args     []string          `mapstructure:"args"`
	Env      map[string]string `mapstructure:"env"`
	EnvFiles map[string]string `mapstructure:"envFiles"`
	Cwd      string            `mapstructure:"cwd"`

	// URL is a Streamable HTTP endpoint (http or https). Headers are sent
	// with every request; HeaderFiles read a header's value from a secret
	// file when connecting (e.g. Authorization: /run/secrets/mcp-auth
	// holding "Bearer …").
	URL         string            `mapstructure:"url"`
	Headers     map[string]string `mapstructure:"headers"`
	HeaderFiles map[string]string `mapstructure:"headerFiles"`

	// Tools filters the server's tools by their own (unprefixed) names;
	// patterns as path.Match reads them ("read_*"). Empty Allow admits
	// all; Deny wins.
	Tools Filter `mapstructure:"tools"`
	// Timeout bounds one tool call (default 60 s); ConnectTimeout one
	// connection with its handshake and tool listing (default 20 s).
	Timeout        time.Duration `mapstructure:"timeout"`
	ConnectTimeout time.Duration `mapstructure:"connectTimeout"`
}

// Filter is a server's tools.allow / tools.deny.
type Filter struct {
	Allow []string `mapstructure:"allow"`
	Deny  []string `mapstructure:"deny"`
}

// Admits reports whether the filter lets a tool (by its server-side name) through.
func (f Filter) Admits(tool string) bool {
	match := func(pats []string) bool {
		for _, p := range pats {
			if ok, _ := path.Match(p, tool); ok {
				return true
			}
		}
		return false
	}
	if match(f.Deny) {
		return false
	}
	return len(f.Allow) == 0 || match(f.Allow)
}

// IsEnabled reports whether the server is to be connected.
func (c ServerConfig) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Transport names how the server is reached: "stdio" or "http".
func (c ServerConfig) Transport() string {
	if c.URL != "" {
		return "http"
	}
	return "stdio"
}

// CallTimeout is Timeout or its default.
func (c ServerConfig) CallTimeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// DialTimeout is ConnectTimeout or its default.
func (c ServerConfig) DialTimeout() time.Duration {
	if c.ConnectTimeout <= 0 {
		return DefaultConnectTimeout
	}
	return c.ConnectTimeout
}

// ValidServerName reports whether name may name a server.
func ValidServerName(name string) bool { return serverName.MatchString(name) }

// Validate checks every server (in name order) and reports the first
// problem; the error names the key below `mcp.`.
func (c Config) Validate() error {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !ValidServerName(n) {
			return fmt.Errorf("servers.%s: a server name is 1-32 lower-case letters, digits and '-', starting with a letter or digit", n)
		}
		if err := c.Servers[n].Validate(); err != nil {
			return fmt.Errorf("servers.%s.%w", n, err)
		}
	}
	return nil
}

// Validate checks one server's settings (no I/O); errors start with the key.
func (c ServerConfig) Validate() error {
	switch {
	case c.Command == "" && c.URL == "":
		return errors.New("command: set command (a stdio server) or url (a Streamable HTTP server)")
	case c.Command != "" && c.URL != "":
		return errors.New("url: set either command (stdio) or url (Streamable HTTP), not both")
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url: %q is not an http:// or https:// URL", c.URL)
		}
		if len(c.Args) > 0 || len(c.Env) > 0 || len(c.EnvFiles) > 0 || c.Cwd != "" {
			return errors.New("args: args, env, envFiles and cwd are for stdio servers (command), not url")
		}
		for _, m := range []struct {
			key string
			h   map[string]string
		}{{"headers", c.Headers}, {"headerFiles", c.HeaderFiles}} {
			for k, v := range m.h {
				if !validHeaderName(k) || strings.ContainsAny(v, "\r\n") {
					return fmt.Errorf("%s.%s: not a valid HTTP header", m.key, k)
				}
			}
		}
	} else {
		if strings.TrimSpace(c.Command) != c.Command {
			return fmt.Errorf("command: %q starts or ends with white space", c.Command)
		}
		if len(c.Headers) > 0 || len(c.HeaderFiles) > 0 {
			return errors.New("headers: headers and headerFiles are for url servers, not command")
		}
		for _, m := range []struct {
			key string
			env map[string]string
		}{{"env", c.Env}, {"envFiles", c.EnvFiles}} {
			for k := range m.env {
				if !envName.MatchString(k) {
					return fmt.Errorf("%s.%s: not a valid environment variable name", m.key, k)
				}
			}
		}
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"timeout", c.Timeout}, {"connectTimeout", c.ConnectTimeout}} {
		if d.v < 0 || d.v > MaxTimeout {
			return fmt.Errorf("%s: %s is not between 0 (the default) and %s", d.key, d.v, MaxTimeout)
		}
	}
	for _, f := range []struct {
		key  string
		pats []string
	}{{"tools.allow", c.Tools.Allow}, {"tools.deny", c.Tools.Deny}} {
		for _, p := range f.pats {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return fmt.Errorf("%s: %q is not a tool name or pattern", f.key, p)
			}
		}
	}
	return nil
}

// CheckSecrets reads every secret file the servers name, so that a missing
// or empty one is reported when the config loads; the values are read
// again when a server connects (a rotated secret applies at reconnection).
func (c Config) CheckSecrets() error {
	var errs []error
	for name, s := range c.Servers {
		for _, m := range []struct {
			key   string
			files map[string]string
		}{{"headerFiles", s.HeaderFiles}, {"envFiles", s.EnvFiles}} {
			for k, p := range m.files {
				if _, err := secret.ReadFile(p); err != nil {
					errs = append(errs, fmt.Errorf("mcp.servers.%s.%s.%s: %w", name, m.key, k, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r) {
			return false
		}
	}
	return http.CanonicalHeaderKey(k) != ""
}
