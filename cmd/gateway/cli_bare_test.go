package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBareGatewayPrintsHelp: `gateway` alone prints the help and exits 2
// without starting a daemon or creating ~/.gateway; an unknown command is
// a usage error (2) with a suggestion; an error has one "gateway:" prefix;
// a storage command without a config says how to give one.
func TestBareGatewayPrintsHelp(t *testing.T) {
	home := t.TempDir()
	run := func(args ...string) (string, string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, gatewayBin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GATEWAY_CONFIG=")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	stdout, stderr, code := run()
	if code != exitUsage || !strings.Contains(stdout, "Available Commands") || !strings.Contains(stderr, "gateway run --config FILE") {
		t.Errorf("bare gateway: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, ".gateway")); !os.IsNotExist(err) {
		t.Errorf("bare gateway made ~/.gateway (stat: %v)", err)
	}

	_, stderr, code = run("sesions")
	if code != exitUsage || !strings.Contains(stderr, `unknown command "sesions" (did you mean "sessions"?)`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, stderr)
	}

	_, stderr, code = run("sessions", "list")
	if code != exitFailure || strings.Contains(stderr, "gateway: gateway:") || !strings.Contains(stderr, "pass -c FILE or set GATEWAY_CONFIG") {
		t.Errorf("sessions list without a config: exit %d, stderr %q", code, stderr)
	}

	bad := filepath.Join(t.TempDir(), "gateway.yaml")
	// A config the loader accepts and the daemon refuses at start: the
	// state dir is a file.
	stateFile := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(stateFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("stateDir: "+stateFile+"\nhttp: {listen: '127.0.0.1:0'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run("--config", bad)
	if code != exitFailure || strings.HasPrefix(stderr, "gateway: gateway:") || !strings.HasPrefix(stderr, "gateway: ") {
		t.Errorf("gateway --config (run): exit %d, stderr %q", code, stderr)
	}
}

// TestErrorsNameTheCommandOnce: a message that names its command by its
// path (usage mistakes, "the daemon is not running") reads "gateway:
// deliveries list: ...", not "gateway: gateway deliveries list: ...".
func TestErrorsNameTheCommandOnce(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"deliveries", "list"}, "gateway: deliveries list: say --failed"},
		{[]string{"deliveries", "discard", "x"}, "gateway: deliveries discard: the daemon is not running"},
		{[]string{"sessions", "show"}, "gateway: sessions show: want 1 argument(s)"},
		{[]string{"sessions", "frob"}, `gateway: sessions: unknown subcommand "frob"`},
		{[]string{"sessions", "search"}, "gateway: sessions search: want the words"},
	} {
		r := gw(t, cfg, c.args...)
		if r.Code == 0 || !strings.HasPrefix(r.Stderr, c.want) {
			t.Errorf("gateway %v: exit %d, stderr %q; want it to start %q", c.args, r.Code, r.Stderr, c.want)
		}
	}
}
