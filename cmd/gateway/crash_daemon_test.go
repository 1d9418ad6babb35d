package main

// The crash tests' daemon: the built binary run as a child process,
// killed and started again on one state dir.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// crashDaemon is the built gateway run as a child process on one state dir.
type crashDaemon struct {
	t    *testing.T
	cfg  string
	addr string
	logs string
	// config, if set, is the config file's text for an API root; start
	// writes it with the fake Telegram's root tagged by the run (runVia),
	// so the fake's record tells which run sent each message.
	config  func(apiRoot string) string
	tg      *telegramtest.Server
	cmd     *exec.Cmd
	runs    int
	readies []time.Duration
}

// runVia is the fake Telegram's via tag of a daemon's run n: what run n
// sends is recorded with Sent.Via = runVia(n).
func runVia(n int) string { return "run" + strconv.Itoa(n) }

func (d *crashDaemon) start() {
	d.t.Helper()
	d.runs++
	if d.config != nil {
		if err := os.WriteFile(d.cfg, []byte(d.config(d.tg.Via(runVia(d.runs)))), 0o600); err != nil {
			d.t.Fatal(err)
		}
	}
	logf, err := os.Create(filepath.Join(d.logs, fmt.Sprintf("run-%03d.log", d.runs)))
	if err != nil {
		d.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(gatewayBin, "run", "--config", d.cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+d.logs)
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd = cmd
	client := &http.Client{Timeout: time.Second}
	// Ready takes 2-4 s here, 10 s on a loaded machine (PostgreSQL
	// start-up work included): the cap only bounds a daemon that never
	// gets ready.
	for deadline := time.Now().Add(crashReadyCap); ; {
		res, err := client.Get("http://" + d.addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			// Say why here: the log goes with the test's temp dir.
			_ = cmd.Process.Signal(syscall.SIGQUIT) // a hung daemon prints its goroutines
			time.Sleep(time.Second)
			d.t.Fatalf("restart %d not ready after %s (log %s; exited: %v); its log ends:\n%s", d.runs, crashReadyCap, logf.Name(),
				cmd.ProcessState != nil || processGone(cmd.Process.Pid), logTail(logf.Name(), 200))
		}
		time.Sleep(time.Millisecond)
	}
	d.readies = append(d.readies, time.Since(begin))
}

func (d *crashDaemon) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	_ = d.cmd.Wait()
}

func (d *crashDaemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		d.kill()
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// newCrashDaemon writes the config of a daemon on state against the fakes
// (queue is messages.queue, extra more YAML such as a storage block) under
// base/logs and returns it, not started. The kills are the test's, not
// the messages' doing: messages.delivery.maxCrashes is at its maximum
// (100, above any run's kills), or a turn slower than the kill interval
// (seconds of lane wait on a loaded machine) dies 5 times in a row and is
// given up with a notice (seen: 17 of 6059 inputs in one run).
func newCrashDaemon(t *testing.T, base, state string, tg *telegramtest.Server, model *openaitest.Server, queue, extra string) *crashDaemon {
	t.Helper()
	d := &crashDaemon{t: t, addr: freeAddr(t), logs: filepath.Join(base, "logs"), tg: tg}
	if err := os.MkdirAll(d.logs, 0o700); err != nil {
		t.Fatal(err)
	}
	d.cfg = filepath.Join(d.logs, "gateway.yaml")
	d.config = func(apiRoot string) string {
		return fmt.Sprintf(`stateDir: %s
http: {listen: %q}
log: {level: info, format: console}
channels:
  telegram:
    accounts:
      default: {token: %q, apiRoot: %q, dmPolicy: open, pollTimeoutSeconds: 1}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model, maxConcurrent: 8}
  list: [{id: main}]
messages:
  queue: %s
  delivery: {maxCrashes: 100}
`, state, d.addr, tg.Token(), apiRoot, model.BaseURL(), queue) + extra
	}
	if err := os.WriteFile(d.cfg, []byte(d.config(tg.URL)), 0o600); err != nil {
		t.Fatal(err) // for the tests that read the file before the first start
	}
	return d
}

// processGone reports whether pid no longer runs (or is a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
