package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
)

// TestSecondDaemonOnStateDirRefused: a second daemon on the same state dir
// exits at once with an error naming the running one's pid, instead of
// reporting ready and competing for Telegram updates.
func TestSecondDaemonOnStateDirRefused(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	yaml := e2eConfig(filepath.Join(t.TempDir(), "state"), tg, model)
	startDaemon(t, yaml)
	cfg, err := configs.LoadBytes([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = serve(ctx, cfg, "", zaptest.NewLogger(t), &deps{OnReady: func(string) { t.Error("second daemon became ready") }})
	if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(err.Error(), "another gateway") {
		t.Fatalf("second daemon: %v, want an error naming pid %d", err, os.Getpid())
	}
	// The binary exits non-zero with the same message.
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := gw(t, cfgPath, "run").want(t, 1)
	if !strings.Contains(r.Stderr, "another gateway (pid "+strconv.Itoa(os.Getpid())+")") {
		t.Errorf("stderr of the second daemon:\n%s", r.Stderr)
	}
}

// TestWorldWritableStateDirRestricted: a state dir open to others is
// warned about and restricted to its owner at start.
func TestWorldWritableStateDirRestricted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.Chmod(dir, 0o777))
	core, logs := observer.New(zap.WarnLevel)
	if err := secureStateDir(dir, zap.New(core)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode after start %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	if logs.FilterMessageSnippet("accessible to other users").Len() != 1 {
		t.Errorf("no warning: %+v", logs.All())
	}
}
