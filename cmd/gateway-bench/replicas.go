package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// webhookSecret is the secret token of the bench's webhook mode.
const webhookSecret = "bench-secret"

// daemonSpec is what one gateway process of a run is configured with.
type daemonSpec struct {
	dir       string // its own directory: config, log, state
	httpAddr  string
	tg        *telegramtest.Server
	modelURL  string
	streaming string
	// dbURL is the postgres database; "" runs on the files backend.
	dbURL string
	// replicaID, when set, makes the daemon one of several replicas on
	// dbURL (storage.postgres.replicas) with Telegram in webhook mode:
	// every replica accepts updates (polling would run on the leader only).
	replicaID string
	// poll keeps Telegram long polling on a daemon with a replicaID (the
	// leader of one, restarted in place: -mode restart -replicas 1).
	poll bool
	// maxConcurrent is agents.defaults.maxConcurrent: the turns a daemon
	// runs at once (0: 8).
	maxConcurrent int
	// sqlite runs the daemon on the sqlite backend (dbURL "").
	sqlite bool
	// floor runs the floor bot (floorbot.go, this binary re-executed)
	// instead of the gateway: nothing kept, same fakes, same measures;
	// floorContext, when set, is the context floor's template file.
	floor        bool
	floorContext string
}

// config is the daemon's YAML.
func (s daemonSpec) config() string {
	telegram := ""
	if s.replicaID != "" && !s.poll {
		telegram = fmt.Sprintf(`
        mode: webhook
        webhook: {url: "https://bench.invalid/telegram/webhook", secretToken: %s}`, webhookSecret)
	}
	cfg := fmt.Sprintf(`stateDir: %s
http: {listen: "%s"}
log: {level: warn, format: json}
channels:
  telegram:
    accounts:
      default:
        token: "%s"
        apiRoot: "%s"
        dmPolicy: open
        allowFrom: ["*"]
        streaming: {mode: %s}%s
providers:
  fake: {type: openai, baseURL: "%s", apiKey: "bench"}
agents:
  defaults: {model: fake/bench, maxConcurrent: %d}
  list: [{id: main}]
messages:
  queue: {mode: followup, cap: 1000}
  inbound: {byChannel: {telegram: {}}}   # one reply per message: no burst assembly
`, filepath.Join(s.dir, "state"), s.httpAddr, s.tg.Token(), s.tg.URL, s.streaming, telegram, s.modelURL, s.turnsAtOnce())
	switch {
	case s.replicaID != "":
		cfg += fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q, replicaId: %s, replicas: true}}\n", s.dbURL, s.replicaID)
	case s.dbURL != "":
		cfg += fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q}}\n", s.dbURL)
	case s.sqlite:
		cfg += "storage: {backend: sqlite}\n"
	}
	return cfg
}

// turnsAtOnce is the daemon's maxConcurrent.
func (s daemonSpec) turnsAtOnce() int {
	if s.maxConcurrent > 0 {
		return s.maxConcurrent
	}
	return 8
}

// command is the process the spec runs: the gateway on its config, or
// with floor this binary as the floor bot (floorMain).
func (s daemonSpec) command(gateway, cfgPath string) (*exec.Cmd, error) {
	if !s.floor {
		return exec.Command(gateway, "run", "--config", cfgPath), nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("floor: own executable: %w", err)
	}
	cmd := exec.Command(self, "-api-root", s.tg.URL, "-token", s.tg.Token(), "-model-url", s.modelURL,
		"-listen", s.httpAddr, "-max-concurrent", strconv.Itoa(s.turnsAtOnce()), "-context", s.floorContext)
	cmd.Env = append(os.Environ(), floorRoleEnv+"="+floorRole)
	return cmd, nil
}

// daemon is one running gateway process.
type daemon struct {
	name     string
	httpAddr string
	cmd      *exec.Cmd
	logPath  string
	started  time.Time
	waited   chan struct{} // closed when the process has been waited for
	stopOnce func()
}

// startDaemon writes the spec's config under spec.dir and starts the
// gateway binary on it; Stop (or Kill) must be called.
func startDaemon(gateway, name string, spec daemonSpec) (*daemon, error) {
	if err := os.MkdirAll(spec.dir, 0o700); err != nil {
		return nil, fmt.Errorf("%s: dir: %w", name, err)
	}
	cfgPath := filepath.Join(spec.dir, "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(spec.config()), 0o600); err != nil {
		return nil, fmt.Errorf("%s: write config: %w", name, err)
	}
	d := &daemon{name: name, httpAddr: spec.httpAddr, logPath: filepath.Join(spec.dir, "gateway.log"), waited: make(chan struct{})}
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log: %w", name, err)
	}
	d.started = time.Now()
	if d.cmd, err = spec.command(gateway, cfgPath); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: start gateway: %w", name, err)
	}
	go func() {
		_ = d.cmd.Wait()
		logf.Close()
		close(d.waited)
	}()
	d.stopOnce = sync.OnceFunc(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.waited:
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.waited
		}
	})
	return d, nil
}

// startReady starts spec on a free loopback address (its httpAddr is
// picked here) and waits until it is ready; the daemon is returned, to be
// stopped, even when it never became ready.
func startReady(ctx context.Context, gateway, name string, spec daemonSpec) (*daemon, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	spec.httpAddr = addr
	d, err := startDaemon(gateway, name, spec)
	if err != nil {
		return nil, err
	}
	if _, err := d.Ready(ctx); err != nil {
		return d, err
	}
	return d, nil
}

// Ready waits for /readyz and returns the time from start to ready.
func (d *daemon) Ready(ctx context.Context) (time.Duration, error) {
	at, err := waitReady(ctx, "http://"+d.httpAddr+"/readyz", 30*time.Second)
	if err != nil {
		return 0, fmt.Errorf("%s: %w (log: %s)", d.name, err, d.logPath)
	}
	return at.Sub(d.started), nil
}

// Stop ends the daemon with SIGTERM (SIGKILL after 30 s) and waits.
func (d *daemon) Stop() { d.stopOnce() }

// Kill ends the daemon with SIGKILL at once and waits; it returns when the
// signal was sent.
func (d *daemon) Kill() time.Time {
	at := time.Now()
	_ = d.cmd.Process.Kill()
	<-d.waited
	return at
}

// Freeze stops the daemon with SIGSTOP (a hung process, a frozen VM) and
// returns when the signal was sent; Thaw resumes it.
func (d *daemon) Freeze() time.Time {
	at := time.Now()
	_ = d.cmd.Process.Signal(syscall.SIGSTOP)
	return at
}

// Thaw resumes a frozen daemon with SIGCONT.
func (d *daemon) Thaw() { _ = d.cmd.Process.Signal(syscall.SIGCONT) }

// Pid is the process id.
func (d *daemon) Pid() int { return d.cmd.Process.Pid }

// freeAddr picks a loopback address for a daemon's HTTP listener.
func freeAddr() (string, error) {
	ln, addr, err := listen()
	if err != nil {
		return "", err
	}
	ln.Close()
	return addr, nil
}
