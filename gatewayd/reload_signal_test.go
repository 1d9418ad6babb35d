package gatewayd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
)

// sighupChildEnv marks the test process TestSIGHUPWhileStartingOrStopping
// runs the daemon in.
const sighupChildEnv = "GATEWAY_TEST_SIGHUP_CHILD"

// hupOnClose is a backend that sends its own process SIGHUP when closed:
// the daemon closes its backend last, after the shutdown.
type hupOnClose struct{ sessions.Backend }

func (b hupOnClose) Close() error {
	_ = syscall.Kill(os.Getpid(), syscall.SIGHUP)
	return b.Backend.Close()
}

// TestSIGHUPWhileStartingOrStopping: `systemctl reload` (SIGHUP) reaching
// the daemon while it starts (opening its storage, before the config
// watcher runs) or while it stops (after the watcher ended, in-flight
// turns finishing) does not kill it: an unhandled SIGHUP terminates a
// process, and systemd counts a death by SIGHUP as clean, so
// Restart=on-failure leaves the service down. A SIGHUP during the start
// reloads once the daemon runs. The daemon runs in a child process, which
// the signal would kill.
func TestSIGHUPWhileStartingOrStopping(t *testing.T) {
	if os.Getenv(sighupChildEnv) == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSIGHUPWhileStartingOrStopping$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), sighupChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("the daemon's process was killed by %v:\n%s", ee.ProcessState.Sys().(syscall.WaitStatus).Signal(), out)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSIGHUPWhileStartingOrStopping") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(reloadYAML(filepath.Join(dir, "state"), "")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	d, err := New(cfg, Options{ConfigPath: path, Logger: zaptest.NewLogger(t),
		OnReady: func(a string) { ready <- a },
		OpenBackend: func(ctx context.Context, cfg *configs.Config) (sessions.Backend, error) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGHUP) // while starting
			b, err := OpenBackend(ctx, cfg, BackendOptions{})
			if err != nil {
				return nil, err
			}
			return hupOnClose{b}, nil // and while stopping
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	// The SIGHUP of the start reloads the (unchanged) file once running.
	waitFor(t, func() bool {
		return strings.Contains(scrape(t, addr), `gateway_config_reloads_total{result="unchanged"} 1`)
	})
	if reply, _ := chat(t, addr, "", "hello"); !strings.Contains(reply, "hello") {
		t.Fatalf("reply %q", reply)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// TestInvalidSaveWhileStartingIsReported: an invalid save that lands
// while the daemon starts (after it loaded the file, before its watcher
// runs: no event reaches the watcher) is rejected with the usual error
// naming the key, as one saved later would be, not passed over in silence
// with the operator believing it applied.
func TestInvalidSaveWhileStartingIsReported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	mode := func(m string) []byte { return []byte(reloadYAML(state, "messages: {queue: {mode: "+m+"}}\n")) }
	if err := os.WriteFile(path, mode("collect"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	ready := make(chan string, 1)
	d, err := New(cfg, Options{ConfigPath: path, Logger: log, OnReady: func(a string) { ready <- a },
		OpenBackend: func(ctx context.Context, cfg *configs.Config) (sessions.Backend, error) {
			if err := os.WriteFile(path, mode("shout"), 0o600); err != nil { // saved while starting
				return nil, err
			}
			return OpenBackend(ctx, cfg, BackendOptions{})
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	waitFor(t, func() bool { return logs.FilterMessageSnippet("config reload rejected").Len() > 0 })
	e := logs.FilterMessageSnippet("config reload rejected").All()[0]
	if msg := e.ContextMap()["error"]; !strings.Contains(msg.(string), "messages.queue.mode") {
		t.Fatalf("rejection says %q, want the key messages.queue.mode", msg)
	}
}
