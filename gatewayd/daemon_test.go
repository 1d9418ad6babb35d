package gatewayd

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/configs"
)

func testConfig(t testing.TB, yaml string) *configs.Config {
	t.Helper()
	cfg, err := configs.LoadBytes([]byte("stateDir: "+filepath.Join(t.TempDir(), "state")+"\n"+yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestNewRefusesWhatItCannotRun: no config, or a storage backend that does
// not exist, is an error from New, before anything is opened.
func TestNewRefusesWhatItCannotRun(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	bad := testConfig(t, "")
	bad.Storage.Backend = "mysql"
	_, err := New(bad, Options{})
	if err == nil || !strings.Contains(err.Error(), `storage.backend: "mysql"`) {
		t.Errorf("unknown backend: %v", err)
	}
	d, err := New(testConfig(t, "storage: {backend: files}\n"), Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Addr() != "" || d.API() != nil {
		t.Errorf("before Run: Addr %q, API %v", d.Addr(), d.API())
	}
}

// TestRunReleasesWhatItOpenedOnFailure: a daemon that cannot listen
// returns the error naming the address, releases the state dir for the
// next one, and cannot be run again.
func TestRunReleasesWhatItOpenedOnFailure(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t, "http: {listen: \""+taken.Addr().String()+"\"}\n")
	d, err := New(cfg, Options{Logger: zaptest.NewLogger(t), OnReady: func(string) { t.Error("ready without a listener") }})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listen "+taken.Addr().String()) {
		t.Fatalf("Run = %v, want a listen error", err)
	}
	release, err := lockStateDir(cfg.StateDir)
	if err != nil {
		t.Fatalf("state dir still locked after Run failed: %v", err)
	}
	release()
	if err := d.Run(context.Background()); !errors.Is(err, errAlreadyRan) {
		t.Errorf("second Run = %v, want errAlreadyRan", err)
	}
}
