package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/internal/openclaw/openclawtest"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestImportExportNameThemselves: import and export open the configured
// backend with storage migrate's code; a refusal (a daemon holds the
// database) or a failure names the command the operator ran, not
// `storage migrate`.
func TestImportExportNameThemselves(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, t.TempDir(), "", ocAgents+pgStorage(url))
	src := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	ctx := context.Background()
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	must(t, err)
	defer db.Close()
	release, err := db.HoldShared(ctx)
	must(t, err)
	defer release()
	oc := filepath.Join(t.TempDir(), "openclaw")
	for _, c := range []struct {
		op   string
		args []string
	}{
		{"export openclaw", []string{"export", "openclaw", "--to", oc}},
		{"import openclaw", []string{"import", "openclaw", "--from", src}},
	} {
		r := gw(t, cfg, c.args...)
		if r.Code != 1 || !strings.HasPrefix(r.Stderr, "gateway: "+c.op+": ") || strings.Contains(r.Stderr, "storage migrate") ||
			!strings.Contains(r.Stderr, "in use by a running gateway") {
			t.Errorf("gateway %v beside a daemon: exit %d, stderr %q; want 1, naming %s and the daemon", c.args, r.Code, r.Stderr, c.op)
		}
	}
}
