package deploytest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels/telegram"
)

// haproxyConfig is an HAProxy config file as sections ("backend chat")
// of directive lines, comments and indentation stripped.
type haproxyConfig struct {
	sections map[string][]string
}

func parseHAProxy(t *testing.T, path string) *haproxyConfig {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("haproxy config: %v", err)
	}
	h := &haproxyConfig{sections: map[string][]string{}}
	cur := ""
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			cur = strings.Join(strings.Fields(line), " ")
			h.sections[cur] = nil
			continue
		}
		h.sections[cur] = append(h.sections[cur], strings.Join(strings.Fields(line), " "))
	}
	return h
}

// directives returns the lines of section that start with prefix.
func (h *haproxyConfig) directives(section, prefix string) []string {
	var out []string
	for _, l := range h.sections[section] {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// timeout is section's `timeout <name>`, else the defaults section's.
func (h *haproxyConfig) timeout(t *testing.T, section, name string) time.Duration {
	t.Helper()
	for _, s := range []string{section, "defaults"} {
		for _, l := range h.directives(s, "timeout "+name+" ") {
			return haproxyDuration(t, strings.Fields(l)[2])
		}
	}
	t.Fatalf("haproxy: no timeout %s for %s", name, section)
	return 0
}

// haproxyDuration parses HAProxy's time format (a number, default ms, or
// with us, ms, s, m, h, d).
func haproxyDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)(us|ms|s|m|h|d)?$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("haproxy: %q is not a time", s)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit
}

// frontend is the one frontend section's name.
func (h *haproxyConfig) frontend(t *testing.T) string {
	t.Helper()
	var names []string
	for s := range h.sections {
		if strings.HasPrefix(s, "frontend ") {
			names = append(names, s)
		}
	}
	if len(names) != 1 {
		t.Fatalf("haproxy: want one frontend, have %v", names)
	}
	return names[0]
}

// route is the backend the frontend picks for a request: its use_backend
// rules in order (conditions ANDed: ACL names of path, path_beg or
// path_reg, and METH_GET/METH_POST), else default_backend.
func (h *haproxyConfig) route(t *testing.T, method, path string) string {
	t.Helper()
	fe := h.frontend(t)
	acls := map[string]func(string) bool{}
	for _, l := range h.directives(fe, "acl ") {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("haproxy: acl %q: want acl NAME FETCH VALUE", l)
		}
		v := f[3]
		switch f[2] {
		case "path":
			acls[f[1]] = func(p string) bool { return p == v }
		case "path_beg":
			acls[f[1]] = func(p string) bool { return strings.HasPrefix(p, v) }
		case "path_reg":
			re := regexp.MustCompile(v)
			acls[f[1]] = re.MatchString
		default:
			t.Fatalf("haproxy: acl %q: the test knows path, path_beg and path_reg", l)
		}
	}
	for _, l := range h.directives(fe, "use_backend ") {
		f := strings.Fields(l)
		if len(f) < 4 || f[2] != "if" {
			t.Fatalf("haproxy: %q: want use_backend NAME if COND...", l)
		}
		all := true
		for _, c := range f[3:] {
			switch {
			case strings.HasPrefix(c, "METH_"):
				all = all && c == "METH_"+method
			case acls[c] != nil:
				all = all && acls[c](path)
			default:
				t.Fatalf("haproxy: %q: unknown condition %s", l, c)
			}
		}
		if all {
			return f[1]
		}
	}
	d := h.directives(fe, "default_backend ")
	if len(d) != 1 {
		t.Fatalf("haproxy: want one default_backend in %s", fe)
	}
	return strings.Fields(d[0])[1]
}

// checkHAProxy checks the proxy in front of the gateway services: every
// backend names exactly those services on the port each listens on, its
// health check asks the API's readiness route, and requests reach the
// backend meant for them (the webhook, the streaming chat with timeouts
// as long as a turn, the rest).
func checkHAProxy(t *testing.T, path string, svc service, gws []gatewayConfig, env map[string]string) {
	t.Helper()
	if path == "" {
		t.Fatal("the haproxy service mounts no haproxy.cfg at /usr/local/etc/haproxy/haproxy.cfg")
	}
	h := parseHAProxy(t, path)
	ports := map[string]string{}
	for _, g := range gws {
		_, port, err := net.SplitHostPort(g.cfg.HTTP.Listen)
		if err != nil {
			t.Fatalf("%s: http.listen %q: %v", g.service, g.cfg.HTTP.Listen, err)
		}
		ports[g.service] = port
	}
	backends := 0
	for s := range h.sections {
		name, ok := strings.CutPrefix(s, "backend ")
		if !ok {
			continue
		}
		backends++
		seen := map[string]bool{}
		for _, l := range h.directives(s, "server ") {
			f := strings.Fields(l)
			host, port, err := net.SplitHostPort(f[2])
			if err != nil || f[1] != host {
				t.Errorf("backend %s: %q: want server NAME NAME:PORT", name, l)
				continue
			}
			want, ok := ports[host]
			switch {
			case !ok:
				t.Errorf("backend %s: server %s is no gateway service of compose.yaml", name, host)
			case port != want:
				t.Errorf("backend %s: server %s on port %s; its http.listen port is %s", name, host, port, want)
			}
			if !strings.Contains(l, " check") {
				t.Errorf("backend %s: server %s is not health-checked", name, host)
			}
			seen[host] = true
		}
		for gw := range ports {
			if !seen[gw] {
				t.Errorf("backend %s: replica %s of compose.yaml is missing", name, gw)
			}
		}
	}
	if backends == 0 {
		t.Fatal("haproxy: no backend")
	}
	checkBind(t, h, svc)
	checkHealthRoute(t, h)
	checkRoutes(t, h, gws)
}

// checkBind: the frontend's port is the one the service publishes.
func checkBind(t *testing.T, h *haproxyConfig, svc service) {
	t.Helper()
	binds := h.directives(h.frontend(t), "bind ")
	if len(binds) == 0 {
		t.Fatal("haproxy: the frontend binds nothing")
	}
	_, port, err := net.SplitHostPort(strings.Fields(binds[0])[1])
	if err != nil {
		t.Fatalf("haproxy: %q: %v", binds[0], err)
	}
	for _, p := range svc.Ports {
		if strings.HasSuffix(p, ":"+port) {
			return
		}
	}
	t.Errorf("haproxy binds :%s but the service publishes %v", port, svc.Ports)
}

// checkHealthRoute: the health check asks a route the API serves without
// a token, answering 503 until the daemon is ready and 200 then.
func checkHealthRoute(t *testing.T, h *haproxyConfig) {
	t.Helper()
	if len(h.directives("defaults", "option httpchk")) == 0 {
		t.Fatal("haproxy: no option httpchk in defaults")
	}
	send := h.directives("defaults", "http-check send ")
	if len(send) != 1 {
		t.Fatal("haproxy: want one http-check send in defaults")
	}
	f := strings.Fields(send[0])
	var method, uri, host string
	for i := 2; i+1 < len(f); i++ {
		switch f[i] {
		case "meth":
			method = f[i+1]
		case "uri":
			uri = f[i+1]
		case "hdr":
			if strings.EqualFold(f[i+1], "Host") && i+2 < len(f) {
				host = f[i+2]
			}
		}
	}
	if got := h.directives("defaults", "http-check expect "); len(got) != 1 || got[0] != "http-check expect status 200" {
		t.Errorf("haproxy: http-check expect %v, want status 200", got)
	}
	srv := api.New(api.Options{Token: "secret", PublicListener: true, AllowedHosts: []string{"gateway.example.com"}})
	ask := func() int {
		req := httptest.NewRequest(method, uri, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := ask(); code != http.StatusServiceUnavailable {
		t.Errorf("health check %s %s (Host %q) on a starting daemon: %d, want 503", method, uri, host, code)
	}
	srv.SetReady(true)
	if code := ask(); code != http.StatusOK {
		t.Errorf("health check %s %s (Host %q) on a ready daemon: %d, want 200", method, uri, host, code)
	}
}

// checkRoutes: Telegram's posts reach the webhook backend, chat streams
// the chat backend (whose timeouts outlast a turn, and nothing buffers),
// the rest the api backend.
func checkRoutes(t *testing.T, h *haproxyConfig, gws []gatewayConfig) {
	t.Helper()
	var turn time.Duration // the longest turn of any replica
	for _, g := range gws {
		turn = max(turn, time.Duration(g.cfg.Agents.Defaults.TimeoutSeconds)*time.Second)
		for id, a := range g.cfg.Channels.Telegram.Accounts {
			a.Config = a.WithDefaults()
			if a.Mode != telegram.ModeWebhook || a.Webhook.Listen != "" {
				continue
			}
			if got := h.route(t, "POST", a.Webhook.Path); got != "webhook" {
				t.Errorf("%s: telegram account %s's webhook %s goes to backend %s, want webhook", g.service, id, a.Webhook.Path, got)
			}
		}
		for _, a := range g.cfg.Agents.List {
			if got := h.route(t, "POST", "/api/agents/"+a.ID+"/chat"); got != "chat" {
				t.Errorf("POST /api/agents/%s/chat goes to backend %s, want chat", a.ID, got)
			}
			if got := h.route(t, "GET", "/api/agents/"+a.ID+"/sessions"); got != "api" {
				t.Errorf("GET /api/agents/%s/sessions goes to backend %s, want api", a.ID, got)
			}
		}
	}
	if got := h.timeout(t, "backend chat", "server"); got < turn {
		t.Errorf("backend chat: timeout server %s is shorter than a turn (%s)", got, turn)
	}
	if got := h.timeout(t, h.frontend(t), "client"); got < turn {
		t.Errorf("timeout client %s is shorter than a turn (%s): the chat stream would be cut", got, turn)
	}
	for s, lines := range h.sections {
		for _, l := range lines {
			if strings.HasPrefix(l, "compression ") || strings.HasPrefix(l, "filter compression") {
				t.Errorf("%s: %q: compression buffers the chat's event stream", s, l)
			}
		}
	}
}
