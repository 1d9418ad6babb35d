package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
	"github.com/gateway/gateway/sessions"
)

// run starts m until the test ends.
func run(t *testing.T, m *mcp.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := m.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

func toolNames(ts []mcp.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func call(t *testing.T, m *mcp.Manager, name string, args string) mcp.Result {
	t.Helper()
	res, err := m.Call(context.Background(), name, []byte(args))
	if err != nil {
		t.Fatalf("Call %s: %v", name, err)
	}
	return res
}

func text(r mcp.Result) string {
	var s []string
	for _, c := range r.Content {
		if c.Type == sessions.BlockText {
			s = append(s, c.Text)
		}
	}
	return strings.Join(s, "\n")
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func status(m *mcp.Manager, name string) mcp.Status {
	for _, s := range m.Status() {
		if s.Name == name {
			return s
		}
	}
	return mcp.Status{}
}

var allTools = []string{"echo", "add", "image", "fail", "sleep", "crash", "pid", "grow", "big", "dotted.name"}

func TestStdioServer(t *testing.T) {
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	cfg := mcptest.StdioConfig(t)
	cfg.Timeout = 500 * time.Millisecond
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"local": cfg}})
	run(t, m)
	tools := m.Tools(context.Background(), nil)
	var want []string
	for _, n := range allTools {
		want = append(want, mcp.ToolName("local", n))
	}
	if got := toolNames(tools); !sameSet(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if !slices.Contains(toolNames(tools), "local__dotted_name") {
		t.Fatalf("dotted.name not offered as local__dotted_name: %v", toolNames(tools))
	}
	var schema map[string]any
	for _, tl := range tools {
		if tl.Name == "local__echo" {
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema["type"] != "object" {
				t.Fatalf("echo schema = %s (%v)", tl.InputSchema, err)
			}
		}
	}

	if got := text(call(t, m, "local__echo", `{"text":"hi there"}`)); got != "hi there" {
		t.Fatalf("echo = %q", got)
	}
	if got := text(call(t, m, "local__add", `{"a":2,"b":40}`)); got != "42" {
		t.Fatalf("add = %q", got)
	}
	if got := text(call(t, m, "local__dotted_name", ``)); got != "dotted" {
		t.Fatalf("dotted.name = %q", got)
	}
	img := call(t, m, "local__image", `{}`)
	if len(img.Content) != 2 || img.Content[1].Type != sessions.BlockImage || img.Content[1].MimeType != "image/png" ||
		!strings.Contains(img.Content[0].Text, "[image: image/png, 70 bytes]") {
		t.Fatalf("image = %+v", img.Content)
	}
	if r := call(t, m, "local__fail", `{}`); !r.IsError || text(r) != "the disk is on fire" {
		t.Fatalf("fail = %+v", r)
	}
	// A bad argument is the server's error result, not a broken session.
	if r, err := m.Call(context.Background(), "local__add", []byte(`{"a":"x"}`)); err == nil && !r.IsError {
		t.Fatalf("add with a string = %+v, want an error", r)
	}

	start := time.Now()
	_, err := m.Call(context.Background(), "local__sleep", []byte(`{"ms":5000}`))
	if err == nil || !strings.Contains(err.Error(), "timed out after 500ms") {
		t.Fatalf("sleep past the timeout: err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	pid1 := text(call(t, m, "local__pid", `{}`))
	// A longer timeout applies without reconnecting; the restart below
	// (a -race test binary on a busy machine) may take a while.
	cfg.Timeout = 30 * time.Second
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"local": cfg}})
	if got := text(call(t, m, "local__pid", `{}`)); got != pid1 {
		t.Fatalf("pid %s after a timeout change, was %s: reconnected", got, pid1)
	}

	_, err = m.Call(context.Background(), "local__crash", nil)
	if err == nil || !strings.Contains(err.Error(), "stopped during the call") {
		t.Fatalf("crash: err = %v", err)
	}
	// The next call waits for the restart.
	pid2 := text(call(t, m, "local__pid", `{}`))
	if pid2 == pid1 || pid2 == "" {
		t.Fatalf("pid after the crash = %q, before %q: not restarted", pid2, pid1)
	}
	st := status(m, "local")
	if st.State != mcp.StateReady || st.Restarts != 1 || st.Transport != "stdio" {
		t.Fatalf("status = %+v", st)
	}
	if _, err := m.Call(context.Background(), "local__nope", nil); err == nil || !strings.Contains(err.Error(), `offers no tool "local__nope"`) {
		t.Fatalf("unknown tool: err = %v", err)
	}
	if _, err := m.Call(context.Background(), "other__echo", nil); err == nil || !strings.Contains(err.Error(), `"other" is not configured`) {
		t.Fatalf("unknown server: err = %v", err)
	}
}

func TestHTTPServerHeadersAndListChanged(t *testing.T) {
	srv := mcptest.NewHTTPServer(t, "Authorization", "Bearer s3cret")
	secretFile := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(secretFile, []byte("Bearer s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{
		"remote": {URL: srv.URL, HeaderFiles: map[string]string{"Authorization": secretFile}, Tools: mcp.Filter{Deny: []string{"crash"}}},
		"noauth": {URL: srv.URL, ConnectTimeout: 2 * time.Second},
	}})
	run(t, m)
	got := toolNames(m.Tools(context.Background(), func(s string) bool { return s == "remote" }))
	if slices.Contains(got, "remote__crash") || !slices.Contains(got, "remote__echo") || slices.Contains(got, "remote__extra") {
		t.Fatalf("tools = %v", got)
	}
	if r := call(t, m, "remote__echo", `{"text":"over http"}`); text(r) != "over http" {
		t.Fatalf("echo = %+v", r)
	}
	call(t, m, "remote__grow", `{}`)
	waitFor(t, "the extra tool after list_changed", func() bool {
		return slices.Contains(toolNames(m.Tools(context.Background(), nil)), "remote__extra")
	})
	if r := call(t, m, "remote__extra", `{}`); text(r) != "extra!" {
		t.Fatalf("extra = %+v", r)
	}
	st := status(m, "noauth")
	if st.State != mcp.StateRestarting || !strings.Contains(st.Error, "Unauthorized") && !strings.Contains(st.Error, "401") {
		t.Fatalf("server without its header: status = %+v", st)
	}
	if len(st.Tools) != 0 {
		t.Fatalf("server without its header offers %v", st.Tools)
	}
}

func TestApplyReload(t *testing.T) {
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond})
	cfg := mcptest.StdioConfig(t)
	cfg.Tools = mcp.Filter{Allow: []string{"pid", "echo"}}
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"a": cfg}})
	run(t, m)
	if got := toolNames(m.Tools(context.Background(), nil)); !sameSet(got, []string{"a__pid", "a__echo"}) {
		t.Fatalf("tools = %v", got)
	}
	pid := text(call(t, m, "a__pid", ``))

	// A new filter applies without reconnecting.
	cfg.Tools = mcp.Filter{Allow: []string{"p*", "add"}}
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"a": cfg}})
	if got := toolNames(m.Tools(context.Background(), nil)); !sameSet(got, []string{"a__pid", "a__add"}) {
		t.Fatalf("tools after the filter change = %v", got)
	}
	if _, err := m.Call(context.Background(), "a__echo", []byte(`{"text":"x"}`)); err == nil {
		t.Fatal("a filtered-out tool was called")
	}
	if got := text(call(t, m, "a__pid", ``)); got != pid {
		t.Fatalf("pid %s after a filter change, was %s: reconnected", got, pid)
	}

	// A changed command restarts it; an added server starts; a removed one stops.
	cfg.Env = map[string]string{mcptest.EnvStdio: "1", "X": "1"}
	b := mcptest.StdioConfig(t)
	b.Tools = mcp.Filter{Allow: []string{"echo"}}
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"a": cfg, "b": b}})
	if got := toolNames(m.Tools(context.Background(), nil)); !sameSet(got, []string{"a__pid", "a__add", "b__echo"}) {
		t.Fatalf("tools after adding b = %v", got)
	}
	if got := text(call(t, m, "a__pid", ``)); got == pid {
		t.Fatal("a kept its process after its env changed")
	}
	off := false
	b.Enabled = &off
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"b": b}})
	if got := toolNames(m.Tools(context.Background(), nil)); len(got) != 0 {
		t.Fatalf("tools after removing a and disabling b = %v", got)
	}
	if _, err := m.Call(context.Background(), "a__pid", nil); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("call to a removed server: %v", err)
	}
	if st := m.Status(); len(st) != 1 || st[0].State != mcp.StateDisabled {
		t.Fatalf("status = %+v", st)
	}
}

// A call waiting for a server that is down (it crashed, and its restart
// is a backoff away) when the operator changes the server's settings is
// sent to the server the reload starts, within the call's timeout, not
// failed with "the server is stopped": the old server never got it.
func TestCallWaitingWhenReloadReplacesServer(t *testing.T) {
	m := mcp.New(mcp.Options{Backoff: 15 * time.Second, MaxBackoff: 15 * time.Second})
	cfg := mcptest.StdioConfig(t)
	cfg.Timeout = 30 * time.Second
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"a": cfg}})
	run(t, m)
	pid := text(call(t, m, "a__pid", ``))
	if _, err := m.Call(context.Background(), "a__crash", nil); err == nil {
		t.Fatal("the crash call succeeded")
	}
	waitFor(t, "the server down", func() bool { return status(m, "a").State == mcp.StateRestarting })

	type answer struct {
		res mcp.Result
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := m.Call(context.Background(), "a__pid", nil)
		got <- answer{res, err}
	}()
	time.Sleep(200 * time.Millisecond) // the call waits for the restart, 15 s away
	cfg.Env = map[string]string{mcptest.EnvStdio: "1", "RELOADED": "1"}
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"a": cfg}})
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatalf("call waiting across the reload: %v", a.err)
		}
		if text(a.res) == pid {
			t.Fatalf("answered by the old process %s", pid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return within 10 s of the reload (the old server's restart was 15 s away)")
	}
}

func TestConnectFailureBacksOff(t *testing.T) {
	m := mcp.New(mcp.Options{Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"gone": {Command: filepath.Join(t.TempDir(), "missing")}}})
	run(t, m)
	if got := m.Tools(context.Background(), nil); len(got) != 0 {
		t.Fatalf("tools = %v", got)
	}
	waitFor(t, "several attempts", func() bool { return status(m, "gone").Restarts >= 3 })
	st := status(m, "gone")
	if st.State != mcp.StateRestarting || !strings.Contains(st.Error, "no such file") {
		t.Fatalf("status = %+v", st)
	}
}

func TestProbe(t *testing.T) {
	srv := mcptest.NewHTTPServer(t)
	res, err := mcp.Probe(context.Background(), "remote", mcp.ServerConfig{URL: srv.URL, Tools: mcp.Filter{Deny: []string{"crash", "grow"}}}, mcp.ProbeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerName != "mcptest-http" || res.Filtered != 2 || len(res.Tools) != len(allTools)-2 || res.Transport != "http" {
		t.Fatalf("probe = %+v", res)
	}
	res, err = mcp.Probe(context.Background(), "local", mcptest.StdioConfig(t), mcp.ProbeOptions{})
	if err != nil || res.ServerName != "mcptest-stdio" {
		t.Fatalf("stdio probe = %+v, %v", res, err)
	}
	_, err = mcp.Probe(context.Background(), "down", mcp.ServerConfig{URL: "http://127.0.0.1:1/mcp", ConnectTimeout: 2 * time.Second}, mcp.ProbeOptions{})
	if err == nil || !strings.Contains(err.Error(), "mcp: probe down: connect") {
		t.Fatalf("probe of a wrong URL: %v", err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestCallFailsFastWhileDown: a call to a crashed server whose restart is
// further away than the call's timeout fails at once, naming the crash
// (with the server's last stderr line) and when it restarts.
func TestCallFailsFastWhileDown(t *testing.T) {
	m := mcp.New(mcp.Options{Backoff: time.Minute})
	cfg := mcptest.StdioConfig(t)
	cfg.Timeout = 5 * time.Second
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"local": cfg}})
	run(t, m)
	if _, err := m.Call(context.Background(), "local__crash", nil); err == nil {
		t.Fatal("crash call succeeded")
	}
	waitFor(t, "the crash noticed", func() bool { return status(m, "local").State == mcp.StateRestarting })
	start := time.Now()
	_, err := m.Call(context.Background(), "local__pid", nil)
	if err == nil || !strings.Contains(err.Error(), "the next restart is in 1m") || !strings.Contains(err.Error(), "crashing on purpose") {
		t.Fatalf("call while down: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the call waited %s", d)
	}
	if st := status(m, "local"); len(st.Tools) == 0 || !strings.Contains(st.Error, "exit status 3") {
		t.Fatalf("status while down = %+v (the last tool list stays offered)", st)
	}
}

func TestMetrics(t *testing.T) {
	m := mcp.New(mcp.Options{})
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	srv := mcptest.NewHTTPServer(t)
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"remote": {URL: srv.URL}, "gone": {URL: "http://127.0.0.1:1/mcp"}}})
	run(t, m)
	m.Tools(context.Background(), nil)
	call(t, m, "remote__echo", `{"text":"x"}`)
	call(t, m, "remote__fail", `{}`)
	_, _ = m.Call(context.Background(), "remote__nope", nil)
	want := `
# HELP gateway_mcp_server_up 1 while the MCP server is connected, 0 otherwise.
# TYPE gateway_mcp_server_up gauge
gateway_mcp_server_up{server="gone"} 0
gateway_mcp_server_up{server="remote"} 1
# HELP gateway_mcp_tool_calls_total MCP tool calls by server and result (ok, error: the tool reported isError, failed: timeout, server down or gone).
# TYPE gateway_mcp_tool_calls_total counter
gateway_mcp_tool_calls_total{result="error",server="remote"} 1
gateway_mcp_tool_calls_total{result="failed",server="remote"} 1
gateway_mcp_tool_calls_total{result="ok",server="remote"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gateway_mcp_server_up", "gateway_mcp_tool_calls_total"); err != nil {
		t.Fatal(err)
	}
}
