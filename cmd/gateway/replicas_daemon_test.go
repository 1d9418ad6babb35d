package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// The replicas of the multi-replica end-to-end test: the built binary run
// N times on one PostgreSQL database, each with its own state dir and
// HTTP listener, Telegram in webhook mode behind the fake's Balancer.

// Webhook settings every replica registers (the load balancer's address;
// the Balancer posts to each replica's own listener at its path).
const (
	replicaHookURL    = "https://lb.example/tg/hook"
	replicaHookPath   = "/tg/hook"
	replicaHookSecret = "e2e-replicas-secret"
)

// replica is one gateway process of a multi-replica run. Each start is a
// new run with its own tag: what the run sends to the fake Telegram and
// the fake model is recorded under it ("r2-1": replica 2, first run).
type replica struct {
	t     *testing.T
	id    string // storage.postgres.replicaId, stable across restarts
	addr  string
	dir   string
	tg    *telegramtest.Server
	model *openaitest.Server
	url   string // the database
	cmd   *exec.Cmd
	runs  int
	tag   string // of the current run
	// extra is YAML appended to every run's config (sections the shared
	// config does not set: jobs).
	extra string
}

func newReplica(t *testing.T, n int, tg *telegramtest.Server, model *openaitest.Server, url string) *replica {
	t.Helper()
	base := t.TempDir()
	if keep := os.Getenv("GATEWAY_REPLICAS_KEEP"); keep != "" {
		base = keep // state and logs stay for inspection
	}
	r := &replica{t: t, id: fmt.Sprintf("r%d", n), addr: freeAddr(t), dir: filepath.Join(base, fmt.Sprintf("r%d", n)),
		tg: tg, model: model, url: url}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return r
}

// hook is the replica's webhook URL, where the balancer posts.
func (r *replica) hook() string { return "http://" + r.addr + replicaHookPath }

// config is the YAML of run tag.
func (r *replica) config(tag string) string {
	return fmt.Sprintf(`stateDir: %s
http: {listen: %q}
log: {level: info, format: console}
channels:
  telegram:
    accounts:
      default:
        token: %q
        apiRoot: %q
        dmPolicy: open
        mode: webhook
        webhook: {url: %q, secretToken: %q}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model, maxConcurrent: 8}
  list: [{id: main}]
messages:
  queue: {mode: collect, debounce: 50ms, cap: 50}
storage: {backend: postgres, postgres: {url: %q, maxConns: 8, statementTimeout: 5s, replicas: true, replicaId: %q}}
`, filepath.Join(r.dir, "state"), r.addr, r.tg.Token(), r.tg.Via(tag), replicaHookURL, replicaHookSecret,
		r.model.BaseURLVia(tag), r.url, r.id) + r.extra
}

// cfgPath is the config file of the current run.
func (r *replica) cfgPath() string { return filepath.Join(r.dir, "gateway-"+r.tag+".yaml") }

// start starts a new run and waits until it is ready (/readyz).
func (r *replica) start() {
	r.t.Helper()
	r.runs++
	r.tag = fmt.Sprintf("%s-%d", r.id, r.runs)
	if err := os.WriteFile(r.cfgPath(), []byte(r.config(r.tag)), 0o600); err != nil {
		r.t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(r.dir, r.tag+".log"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(gatewayBin, "run", "--config", r.cfgPath())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+r.dir)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd = cmd
	if !r.waitReady(20 * time.Second) {
		r.t.Fatalf("replica %s not ready after 20 s (log %s):\n%s", r.tag, logf.Name(), tail(r.log(r.tag), 30))
	}
}

// waitReady reports whether /readyz answers 200 within limit.
func (r *replica) waitReady(limit time.Duration) bool {
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := client.Get("http://" + r.addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return true
			}
		}
	}
	return false
}

func (r *replica) signal(sig syscall.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("replica %s: %s: %v", r.tag, sig, err)
	}
}

// kill SIGKILLs the run and reaps it.
func (r *replica) kill() {
	r.signal(syscall.SIGKILL)
	_ = r.cmd.Wait()
}

// stop ends the run with SIGTERM (SIGKILL after 20 s); a stopped
// (SIGSTOP) run is continued first. It is idempotent.
func (r *replica) stop() {
	if r.cmd == nil || r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// log is what run tag logged ("" for every run of the replica).
func (r *replica) log(tag string) string {
	pattern := filepath.Join(r.dir, tag+".log")
	if tag == "" {
		pattern = filepath.Join(r.dir, "*.log")
	}
	files, _ := filepath.Glob(pattern)
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			fmt.Fprintf(&b, "=== %s\n%s", filepath.Base(f), data)
		}
	}
	return b.String()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// grepLines is the lines of s that contain any of words, at most n, each
// cut to 400 bytes.
func grepLines(s string, n int, words ...string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line[:min(len(line), 400)])
				break
			}
		}
		if len(out) == n {
			break
		}
	}
	return out
}

var ownerRE = regexp.MustCompile(`"owner": "([0-9a-f-]{36})"`)

// owners maps the delivery owners (one per run) the replicas' logs name
// to their run tags.
func owners(reps []*replica) map[string]string {
	out := map[string]string{}
	for _, r := range reps {
		for k := 1; k <= r.runs; k++ {
			tag := fmt.Sprintf("%s-%d", r.id, k)
			for _, m := range ownerRE.FindAllStringSubmatch(r.log(tag), -1) {
				out[m[1]] = tag
			}
		}
	}
	return out
}
