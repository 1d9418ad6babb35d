//go:build linux

package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
)

// running reports whether pid is a live process (a zombie is not: no
// reaper may run in a container).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// A stdio server started through a wrapper that leaves a helper process
// behind (a shell running a background job, npx, a language's launcher):
// when the manager stops, nothing of it is left running, and the stop does
// not wait on the helper holding the server's stderr.
func TestStdioServerLeavesNoProcesses(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	cfg := mcptest.StdioConfig(t)
	exe := cfg.Command
	cfg.Command = "/bin/sh"
	cfg.Args = []string{"-c", `sleep 300 & echo $! > "$HELPER_PID"; exec "$0"`, exe}
	cfg.Env["HELPER_PID"] = pidFile
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"wrapped": cfg}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = m.Run(ctx)
	}()
	defer func() { cancel(); wg.Wait() }()
	if got := text(call(t, m, "wrapped__echo", `{"text":"up"}`)); got != "up" {
		t.Fatalf("echo = %q", got)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	helper, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !running(helper) {
		t.Fatalf("helper pid %q not running (%v)", b, err)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(helper); err == nil {
			_ = p.Kill()
		}
	})
	cancel()
	wg.Wait()
	if running(helper) {
		t.Fatalf("the server's helper process %d still runs after the manager stopped", helper)
	}
}

// A stdio server that never answers the handshake (wedged, or not reading
// its stdin) and ignores SIGTERM is stopped once the connect timeout
// passed, without the grace a session's server gets: it got that grace
// (stdin closed, 5 s, SIGTERM, 5 s, SIGKILL), so its first attempt —
// which every turn offered its tools waits for — lasted the connect
// timeout and 10 s more, and a shutdown during an attempt as long.
func TestHungStdioServerStoppedAtConnectTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	m := mcp.New(mcp.Options{Backoff: time.Minute})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"hung": {Command: "/bin/sh",
		Args: []string{"-c", `trap "" TERM; echo $$ > "$PID_FILE"; while :; do sleep 1; done`},
		Env:  map[string]string{"PID_FILE": pidFile}, ConnectTimeout: time.Second}}})
	run(t, m)
	// 8 s: the connect timeout and the stop, with room for a loaded
	// machine, and less than the 10 s of grace.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	m.Tools(ctx, nil)
	if st := status(m, "hung"); st.State != mcp.StateRestarting || !strings.Contains(st.Error, "deadline exceeded") {
		t.Fatalf("status after waiting for the first attempt = %+v, want restarting after the connect timeout", st)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if running(pid) {
		t.Fatalf("the hung server %d still runs after its attempt ended", pid)
	}
}

// A stdio server that leaves more than Options.MaxMessageBytes of its
// input unread is taken for hung: it is killed, its session ends (though
// a helper it started holds its stdout open, as a launcher's real server
// does) and it is restarted, instead of a session that stays "ready"
// while every write fails.
func TestStdioServerNotReadingIsRestarted(t *testing.T) {
	cfg := rawStdioConfig(t, rawServer{Tools: `[{"name":"slow","inputSchema":{"type":"object"}},{"name":"fast","inputSchema":{"type":"object"}}]`,
		Result: `{"content":[{"type":"text","text":"ok"}]}`}, "")
	exe := cfg.Command
	cfg.Command = "/bin/sh"
	cfg.Args = []string{"-c", `sleep 300 & exec "$0"`, exe}
	cfg.Env[envRawSlow] = "1h" // reads nothing more once slow is called
	cfg.Timeout = 500 * time.Millisecond
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond, MaxMessageBytes: 256 << 10})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"s": cfg}})
	run(t, m)
	// Up and reading first (see TestStdioCallTimesOutWhileServerNotReading).
	waitFor(t, "the server ready", func() bool { return status(m, "s").State == mcp.StateReady })
	if _, err := m.Call(context.Background(), "s__slow", nil); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("slow: %v, want its timeout", err)
	}
	big := []byte(`{"doc":"` + strings.Repeat("x", 200<<10) + `"}`)
	for range 3 { // 600 KiB: the pipe's 64 KiB, then the queue's 256 KiB
		_, _ = m.Call(context.Background(), "s__fast", big)
	}
	waitFor(t, "the server restarted", func() bool { return status(m, "s").Restarts >= 1 })
}

// While a stdio server runs, its process group is recorded in GroupsDir
// (for the daemon started after a SIGKILL of this one to stop it); once
// the manager stopped it, the record is gone.
func TestStdioServerGroupRecordedWhileItRuns(t *testing.T) {
	dir := t.TempDir()
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond, GroupsDir: dir})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"a": mcptest.StdioConfig(t)}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = m.Run(ctx)
	}()
	pid := text(call(t, m, "a__pid", ``))
	rec := filepath.Join(dir, "groups-"+strconv.Itoa(os.Getpid())+".json")
	b, err := os.ReadFile(rec)
	if err != nil {
		cancel()
		wg.Wait()
		t.Fatalf("no record of the running server's group: %v", err)
	}
	if !strings.Contains(string(b), `"pid":`+pid+`,`) {
		t.Errorf("record %s does not name the server's group %s", b, pid)
	}
	cancel()
	wg.Wait()
	if _, err := os.Stat(rec); !os.IsNotExist(err) {
		t.Errorf("record after the manager stopped: %v, want it removed", err)
	}
}
