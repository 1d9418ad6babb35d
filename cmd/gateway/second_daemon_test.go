package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
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
	d, err := gatewayd.New(cfg, gatewayd.Options{Logger: zaptest.NewLogger(t),
		OnReady: func(string) { t.Error("second daemon became ready") }})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(ctx)
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
