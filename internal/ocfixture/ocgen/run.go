package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// Options say where OpenClaw is and where the fixture goes.
type Options struct {
	Node  string // the node 24 binary
	Entry string // openclaw.mjs of the installed package
	Work  string // scratch directory (state, home, logs); created
	Out   string // fixture directory; replaced
	// Nice, when non-zero, runs OpenClaw under `nice -n Nice`: on a loaded
	// machine its hard 5 s startup deadline for the state lease worker
	// is missed otherwise.
	Nice int
	Log  io.Writer
}

// GatewayPort and GatewayToken are the OpenClaw gateway's loopback port and
// token in the generated config.
const (
	GatewayPort  = 18791
	GatewayToken = "fixture-gateway-token"
)

// Run generates the fixture: fakes, OpenClaw, scenario, CLI outputs, copy.
func Run(ctx context.Context, o Options) error {
	for _, d := range []string{"state", "home", "tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(o.Work, d), 0o755); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	reqLog, err := os.Create(filepath.Join(o.Work, "logs", "model-requests.jsonl"))
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer reqLog.Close()
	model := &Model{ToolName: "ls", ToolArgs: `{"path":"."}`,
		SpawnArgs: `{"id":"sessions_spawn","args":{"task":"Count from one to three and report the numbers.","runtime":"subagent","mode":"run"}}`,
		Log:       func(b []byte) { _, _ = reqLog.Write(append(b, '\n')) }}
	f, err := StartFakes(model)
	if err != nil {
		return err
	}
	defer f.Close()
	oc := &openclaw{o: o}
	if err := oc.writeConfig(f); err != nil {
		return err
	}
	gw, err := oc.startGateway()
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = gw.stop(2 * time.Minute)
		}
	}()
	o.logf("waiting for OpenClaw's Telegram polling")
	if err := waitFor(ctx, 10*time.Minute, gw.exited, func() bool { return f.Telegram.Calls("getUpdates") > 0 }); err != nil {
		return fmt.Errorf("run: OpenClaw did not start polling Telegram: %w", err)
	}
	for i, st := range Scenario() {
		o.logf("step %d: %s", i+1, st.Covers)
		if err := oc.step(ctx, f, gw, st); err != nil {
			return fmt.Errorf("run: step %d (%s): %w", i+1, st.Covers, err)
		}
	}
	// Let announces and title generation finish.
	settle(ctx, f, 20*time.Second)
	keys, err := oc.sessionKeys(ctx)
	if err != nil {
		return err
	}
	// The last messages of every session as OpenClaw shows them, in one
	// CLI call (each call costs a node start).
	o.logf("sessions.preview of %d sessions", len(keys))
	params, err := json.Marshal(map[string]any{"keys": keys, "limit": 50, "maxChars": 4000})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	preview, err := oc.cli(ctx, "gateway", "call", "sessions.preview", "--params", string(params), "--json",
		"--token", GatewayToken, "--port", strconv.Itoa(GatewayPort), "--timeout", "300000")
	if err != nil {
		return fmt.Errorf("run: sessions.preview: %w", err)
	}
	o.logf("stopping OpenClaw")
	stopped = true
	if err := gw.stop(6 * time.Minute); err != nil {
		return err
	}
	sessions, err := oc.cli(ctx, "sessions", "--all-agents", "--json", "--limit", "all")
	if err != nil {
		return fmt.Errorf("run: sessions list: %w", err)
	}
	return oc.writeFixture(ctx, sessions, preview)
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
	}
}

type openclaw struct{ o Options }

func (oc *openclaw) state() string { return filepath.Join(oc.o.Work, "state") }

func (oc *openclaw) env() []string {
	w := oc.o.Work
	return append(os.Environ(),
		"HOME="+filepath.Join(w, "home"),
		"TMPDIR="+filepath.Join(w, "tmp"),
		"OPENCLAW_STATE_DIR="+oc.state(),
		"OPENCLAW_CONFIG_PATH="+filepath.Join(oc.state(), "openclaw.json"),
		"OPENCLAW_NO_AUTO_UPDATE=1",
		"OPENCLAW_DISABLE_BONJOUR=1",
		"NO_COLOR=1",
		"TZ=UTC",
	)
}

// writeConfig writes openclaw.json: the fake model as the only provider,
// the fake Bot API as Telegram's apiRoot, per-channel-peer DM sessions.
func (oc *openclaw) writeConfig(f *Fakes) error {
	cfg := map[string]any{
		"gateway": map[string]any{"mode": "local", "port": GatewayPort, "bind": "loopback",
			"auth": map[string]any{"mode": "token", "token": GatewayToken}},
		"agents": map[string]any{"defaults": map[string]any{
			"workspace": filepath.Join(oc.state(), "workspace"),
			"model":     map[string]any{"primary": "fake/fake-model"}}},
		"models": map[string]any{"mode": "replace", "providers": map[string]any{"fake": map[string]any{
			"baseUrl": f.Model.BaseURL(), "apiKey": "sk-fake", "api": "openai-completions",
			"models": []any{map[string]any{"id": "fake-model", "name": "Fake Model", "reasoning": false,
				"input": []string{"text"}, "contextWindow": 32000, "maxTokens": 1024}}}}},
		"channels": map[string]any{"telegram": map[string]any{
			"enabled": true, "botToken": f.Telegram.Token(), "apiRoot": f.BotAPIRoot,
			"dmPolicy": "pairing", "allowFrom": []string{strconv.FormatInt(Bob, 10), strconv.FormatInt(Carol, 10)},
			"groupPolicy": "open", "groups": map[string]any{"*": map[string]any{"requireMention": false}}}},
		"messages": map[string]any{"groupChat": map[string]any{"visibleReplies": "automatic"}},
		"session":  map[string]any{"dmScope": "per-channel-peer"},
		"logging":  map[string]any{"file": filepath.Join(oc.o.Work, "logs", "openclaw.log")},
		"bindings": []any{map[string]any{"agentId": "main", "match": map[string]any{"channel": "telegram", "accountId": "default"}}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(oc.state(), "openclaw.json"), b, 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

func (oc *openclaw) command(ctx context.Context, args ...string) *exec.Cmd {
	argv := append([]string{oc.o.Entry}, args...)
	name := oc.o.Node
	if oc.o.Nice != 0 {
		argv = append([]string{"-n", strconv.Itoa(oc.o.Nice), oc.o.Node}, argv...)
		name = "nice"
	}
	var cmd *exec.Cmd
	if ctx != nil {
		cmd = exec.CommandContext(ctx, name, argv...)
	} else {
		cmd = exec.Command(name, argv...)
	}
	cmd.Env = oc.env()
	cmd.Dir = oc.o.Work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// cli runs one OpenClaw CLI command and returns its stdout; its stderr
// goes to logs/cli.log.
func (oc *openclaw) cli(ctx context.Context, args ...string) ([]byte, error) {
	errf, err := os.OpenFile(filepath.Join(oc.o.Work, "logs", "cli.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("openclaw %s: %w", strings.Join(args, " "), err)
	}
	defer errf.Close()
	fmt.Fprintf(errf, "\n$ openclaw %s\n", strings.Join(args, " "))
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := oc.command(cctx, args...)
	cmd.Stderr = errf
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	out, err := cmd.Output()
	oc.o.logf("  openclaw %s: %v (%s)", args[0], err, time.Since(start).Round(time.Second))
	if err != nil {
		return out, fmt.Errorf("openclaw %s: %w (stdout %q)", strings.Join(args, " "), err, clip(string(out), 400))
	}
	return out, nil
}

type gateway struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	logOut *os.File
}

func (g *gateway) exited() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// startGateway starts `openclaw gateway run` in its own process group.
func (oc *openclaw) startGateway() (*gateway, error) {
	lf, err := os.Create(filepath.Join(oc.o.Work, "logs", "gateway.out"))
	if err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	g := &gateway{cmd: oc.command(nil, "gateway", "run"), done: make(chan struct{}), logOut: lf}
	g.cmd.Stdout, g.cmd.Stderr = lf, lf
	if err := g.cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	// Owner: gateway.stop, which signals the process and waits for done.
	go func() {
		g.err = g.cmd.Wait()
		close(g.done)
	}()
	return g, nil
}

// stop asks the gateway to shut down (SIGTERM, its clean path) and waits;
// after grace it kills the process group it started.
func (g *gateway) stop(grace time.Duration) error {
	defer g.logOut.Close()
	if !g.exited() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-g.done:
	case <-time.After(grace):
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.done
		return fmt.Errorf("stop gateway: no clean exit within %s; killed", grace)
	}
	if g.err != nil {
		return fmt.Errorf("stop gateway: %w", g.err)
	}
	return nil
}

var pairingCode = regexp.MustCompile(`Pairing code:\s*(?:<pre><code>)?\s*([A-Z0-9]{6,12})`)

// step sends one message and waits for OpenClaw's answer.
func (oc *openclaw) step(ctx context.Context, f *Fakes, gw *gateway, st Step) error {
	before := len(sentTo(f, st.Msg))
	f.Telegram.AddMessage(st.Msg)
	want := max(st.Replies, 1)
	if err := waitFor(ctx, 8*time.Minute, gw.exited, func() bool { return len(sentTo(f, st.Msg)) >= before+want }); err != nil {
		return fmt.Errorf("no answer (%d of %d): %w", len(sentTo(f, st.Msg))-before, want, err)
	}
	settle(ctx, f, 8*time.Second)
	if !st.Pairing {
		return nil
	}
	got := sentTo(f, st.Msg)[before:]
	for _, s := range got {
		if m := pairingCode.FindStringSubmatch(s.Text); m != nil {
			_, err := oc.cli(ctx, "pairing", "approve", "telegram", m[1])
			return err
		}
	}
	return fmt.Errorf("no pairing code in %q", got[0].Text)
}

// sentTo is what the bot sent to m's chat (and topic).
func sentTo(f *Fakes, m telegramtest.Message) []telegramtest.Sent {
	var out []telegramtest.Sent
	for _, s := range f.Telegram.Sent() {
		if s.Method == "sendMessage" && s.ChatID == m.ChatID && (m.ThreadID == 0 || s.ThreadID == m.ThreadID) {
			out = append(out, s)
		}
	}
	return out
}

// settle waits until neither the model nor the Bot API saw a new request
// for quiet.
func settle(ctx context.Context, f *Fakes, quiet time.Duration) {
	last := -1
	for {
		n := len(f.Model.Requests()) + f.Telegram.SentCount() + f.Telegram.Calls("editMessageText")
		if n == last {
			return
		}
		last = n
		select {
		case <-ctx.Done():
			return
		case <-time.After(quiet):
		}
	}
}

var errExited = errors.New("OpenClaw exited")

// waitFor polls cond until it holds, the gateway exits or limit passes.
func waitFor(ctx context.Context, limit time.Duration, exited func() bool, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if exited() {
			return errExited
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil
}

// sessionKeys lists the keys OpenClaw reports (while it runs).
func (oc *openclaw) sessionKeys(ctx context.Context) ([]string, error) {
	out, err := oc.cli(ctx, "sessions", "--all-agents", "--json", "--limit", "all")
	if err != nil {
		return nil, fmt.Errorf("session keys: %w", err)
	}
	var list struct {
		Sessions []struct {
			Key string `json:"key"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("session keys: %w", err)
	}
	var keys []string
	for _, s := range list.Sessions {
		keys = append(keys, s.Key)
	}
	return keys, nil
}
