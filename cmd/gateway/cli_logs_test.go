package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
)

// TestLogsFollow: `gateway logs` prints the daemon's recent lines from its
// API, and --follow prints a line logged after it started.
func TestLogsFollow(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	path := filepath.Join(dir, "gateway.yaml")
	y := "stateDir: " + state + "\nhttp: {listen: \"127.0.0.1:0\"}\nlog: {level: info, format: console}\n"
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := runDaemonUntilReady(t, cfg, gatewayd.Options{ConfigPath: path})
	cli := writeConfig(t, state, addr, "")

	r := gw(t, cli, "logs", "-n", "50").want(t, 0)
	if !strings.Contains(r.Stdout, `"msg":"gateway ready"`) {
		t.Fatalf("logs:\n%s", r.Stdout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a cap against a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, gatewayBin, "--config", cli, "logs", "--follow", "-n", "1")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines, done := make(chan string), make(chan struct{})
	defer close(done) // before the kill above: the reader stops sending
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	// The first line (the most recent one) comes once the follower is
	// attached; a save of the config after it logs "config reloaded".
	select {
	case _, ok := <-lines:
		if !ok {
			t.Fatal("logs --follow ended")
		}
	case <-ctx.Done():
		t.Fatal("logs --follow printed nothing")
	}
	if err := os.WriteFile(path, []byte(y+"messages: {queue: {mode: followup}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("logs --follow ended")
			}
			if strings.Contains(l, `"msg":"config reloaded"`) {
				return
			}
		case <-ctx.Done():
			t.Fatal("logs --follow printed no reload")
		}
	}
}
