package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/gateway/gateway/internal/secret"
)

// inheritedEnv are the daemon's variables a stdio server gets (as the
// SDKs of other languages do): enough to find programs and a home, nothing
// that holds the daemon's own secrets.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "TMPDIR"}

// Tool is one tool a server offers, as the agents see it.
type Tool struct {
	// Name is the name offered to models (ToolName of Server and Remote).
	Name   string `json:"name"`
	Server string `json:"server"`
	// Remote is the tool's own name on its server.
	Remote      string `json:"remoteName"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's JSON Schema for its arguments (an object).
	InputSchema json.RawMessage `json:"inputSchema"`
}

// dialer opens sessions to one server.
type dialer struct {
	name    string
	cfg     ServerConfig
	version string
	maxMsg  int // bytes of one message from the server at most (0: DefaultMaxMessageBytes)
	http    *http.Client
	log     *zap.Logger
	// onToolsChanged is called on notifications/tools/list_changed.
	onToolsChanged func()
	// stderr keeps the tail of a stdio server's stderr for error messages.
	stderr *tailWriter
	// cmd is the stdio server's process (nil for HTTP), the leader of its
	// own process group; stdio its transport.
	cmd   *exec.Cmd
	stdio *stdioTransport
	// groups records the stdio server's process group while it may run
	// (nil: not recorded).
	groups *groupRegistry
}

// Stopping a stdio server's leftovers: how long Wait waits for the stderr
// pipe once the server exited (a process it started may hold it open),
// and how long the group gets between SIGTERM and SIGKILL.
const (
	stdioWaitDelay = time.Second
	groupGrace     = time.Second
)

// connect starts or reaches the server and completes the MCP handshake.
func (d *dialer) connect(ctx context.Context) (*sdk.ClientSession, error) {
	t, err := d.transport()
	if err != nil {
		return nil, err
	}
	opts := &sdk.ClientOptions{}
	if d.onToolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *sdk.ToolListChangedRequest) { d.onToolsChanged() }
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: d.version}, opts)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w%s", err, d.stderrTail())
	}
	return cs, nil
}

func (d *dialer) transport() (sdk.Transport, error) {
	if d.maxMsg <= 0 {
		d.maxMsg = DefaultMaxMessageBytes
	}
	if d.cfg.URL != "" {
		headers := http.Header{}
		for k, v := range d.cfg.Headers {
			headers.Set(k, v)
		}
		for k, p := range d.cfg.HeaderFiles {
			v, err := secret.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("headerFiles.%s: %w", k, err)
			}
			headers.Set(k, v)
		}
		base := d.http
		if base == nil {
			base = &http.Client{}
		}
		client := *base
		origin, err := url.Parse(d.cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		client.Transport = &headerTransport{base: base.Transport, headers: headers, origin: origin, maxBody: d.maxMsg}
		// MaxEventSize is set: the SDK leaves a zero uncapped.
		return &sdk.StreamableClientTransport{Endpoint: d.cfg.URL, HTTPClient: &client, MaxEventSize: d.maxMsg}, nil
	}
	cmd := exec.Command(d.cfg.Command, d.cfg.Args...)
	cmd.Dir = d.cfg.Cwd
	env, err := d.env()
	if err != nil {
		return nil, err
	}
	cmd.Env = env
	d.stderr = newTailWriter(d.log)
	cmd.Stderr = d.stderr
	// What the server starts goes in its group, stopped with it (reap);
	// Wait does not hang on a pipe such a process still holds.
	ownGroup(cmd)
	cmd.WaitDelay = stdioWaitDelay
	d.cmd = cmd
	d.stdio = &stdioTransport{cmd: cmd, log: d.log, maxMsg: d.maxMsg, started: d.groups.add}
	return d.stdio, nil
}

// ready records that the connection attempt succeeded (handshake and tool
// list): a stdio server closed from now on gets its grace to exit.
func (d *dialer) ready() {
	if d.stdio != nil && d.stdio.proc != nil {
		d.stdio.proc.ready.Store(true)
	}
}

// env is the stdio server's environment: inheritedEnv, then env, then
// envFiles (sorted, so the result is stable).
func (d *dialer) env() ([]string, error) {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := func(m map[string]string) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for _, k := range keys(d.cfg.Env) {
		env = append(env, k+"="+d.cfg.Env[k])
	}
	for _, k := range keys(d.cfg.EnvFiles) {
		v, err := secret.ReadFile(d.cfg.EnvFiles[k])
		if err != nil {
			return nil, fmt.Errorf("envFiles.%s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

// reap stops what is left of a stdio server's process group once its
// session closed (or never opened): processes the server started and did
// not stop, which would otherwise outlive it — and the daemon.
func (d *dialer) reap() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	killGroup(d.cmd.Process.Pid, groupGrace)
	d.groups.remove(d.cmd.Process.Pid)
}

// stderrTail is ": stderr: <last lines>" of a stdio server, or "".
func (d *dialer) stderrTail() string {
	if d.stderr == nil {
		return ""
	}
	if t := d.stderr.tail(); t != "" {
		return " (stderr: " + t + ")"
	}
	return ""
}

// maxListedTools bounds one listing of a server's tools (what it holds
// while it lists; far more than a model is offered well).
const maxListedTools = 2000

// listTools lists every page of the server's tools. A page whose next
// cursor was seen before ends the listing (a server that ignores the
// cursor repeats its first page forever), and so does the page that
// brings the tools past maxListedTools (the first of them are kept);
// both are logged.
func listTools(ctx context.Context, cs *sdk.ClientSession, log *zap.Logger) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	seen := map[string]bool{}
	params := &sdk.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		out = append(out, res.Tools...)
		switch next := res.NextCursor; {
		case next == "":
			return out, nil
		case len(out) >= maxListedTools:
			log.Warn("mcp tool list cut: the server lists too many tools", zap.Int("kept", maxListedTools))
			return out[:maxListedTools], nil
		case seen[next]:
			log.Warn("mcp tool list ended at a repeated page cursor")
			return out, nil
		default:
			seen[next] = true
			params.Cursor = next
		}
	}
}

// offered filters a server's tools and names them for the models; a tool
// whose offered name repeats an earlier one, or whose input schema is not
// an object schema, is left out (logged).
func offered(server string, cfg ServerConfig, raw []*sdk.Tool, log *zap.Logger) []Tool {
	var out []Tool
	seen := map[string]bool{}
	for _, t := range raw {
		if t == nil || !cfg.Tools.Admits(t.Name) {
			continue
		}
		name := ToolName(server, t.Name)
		if seen[name] {
			log.Warn("mcp tool left out: its name collides with another tool's", zap.String("tool", t.Name), zap.String("offered_as", name))
			continue
		}
		schema, ok := inputSchema(t.InputSchema)
		if !ok {
			log.Warn("mcp tool left out: its input schema is not an object schema", zap.String("tool", t.Name))
			continue
		}
		seen[name] = true
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		out = append(out, Tool{Name: name, Server: server, Remote: t.Name, Description: desc, InputSchema: schema})
	}
	return out
}

// headerTransport adds the configured headers to every request to the
// configured server's host and caps a JSON response body at maxBody
// bytes. A request the server redirected to another host (or from https
// to http) goes without them: they hold its secrets (headerFiles).
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	origin  *url.URL // the configured URL
	maxBody int
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == t.origin.Host && (r.URL.Scheme == t.origin.Scheme || r.URL.Scheme == "https") {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header[k] = v
		}
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	// A JSON answer is one message, which the SDK reads whole without a
	// cap; an event stream is capped per event (MaxEventSize).
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		resp.Body = &limitedBody{ReadCloser: resp.Body, limit: t.maxBody, left: int64(t.maxBody)}
	}
	return resp, nil
}

// tailWriter keeps the last bytes a stdio server wrote to stderr and logs
// its lines at debug level (they may hold anything the server chose to
// print).
type tailWriter struct {
	log  *zap.Logger
	mu   sync.Mutex // guards buf
	buf  []byte
	line []byte
}

const stderrTailBytes = 512

func newTailWriter(log *zap.Logger) *tailWriter { return &tailWriter{log: log} }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > stderrTailBytes {
		w.buf = append([]byte(nil), w.buf[len(w.buf)-stderrTailBytes:]...)
	}
	w.line = append(w.line, p...)
	for {
		i := slices.Index(w.line, '\n')
		if i < 0 {
			break
		}
		w.log.Debug("mcp server stderr", zap.ByteString("line", w.line[:min(i, 1024)]))
		w.line = w.line[i+1:]
	}
	if len(w.line) > 4096 {
		w.line = w.line[:0]
	}
	return len(p), nil
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(w.buf), "?")), " ")
}

// errConnectionLost is wrapped by Call's error when the server went away
// during the call.
var errConnectionLost = errors.New("the server stopped during the call")

// DefaultMaxMessageBytes caps one message from a server (a JSON value
// over stdio, a JSON body or an event over Streamable HTTP) unless
// Options.MaxMessageBytes says otherwise: 16 MiB, the SDK's own default
// for stdio lines and events. A larger message ends the connection as it
// arrives, before it is held whole: the call fails with an error naming
// the server and the limit, and the server is reconnected as after any
// other failure.
const DefaultMaxMessageBytes = 16 << 20

// errMessageTooLarge is the read error of a message over the limit.
var errMessageTooLarge = errors.New("a message from the server exceeds the size limit")

// tooLarge is errMessageTooLarge with the limit.
func tooLarge(limit int) error { return fmt.Errorf("%w of %d bytes", errMessageTooLarge, limit) }

// limitedBody is a JSON response body that fails with errMessageTooLarge
// once more than limit bytes were read.
type limitedBody struct {
	io.ReadCloser
	limit int
	left  int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells a body of the limit from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, tooLarge(b.limit)
	}
	return n, err
}
