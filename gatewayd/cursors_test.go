package gatewayd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// openCursors opens the files backend of state and returns its cursors.
func openCursors(t *testing.T, state string) sessions.Cursors {
	t.Helper()
	m, err := filestore.Open(filestore.Options{StateDir: state, Logger: zaptest.NewLogger(t), Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m.Backend().Cursors()
}

func TestTelegramCursorsRoundTrip(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	c := openCursors(t, state)
	s := newTelegramCursors(c, filepath.Join(state, "telegram"), zaptest.NewLogger(t))
	if n, err := s.Load(ctx, "bot1"); err != nil || n != 0 {
		t.Fatalf("Load of a new account = %d, %v; want 0", n, err)
	}
	if err := s.Save(ctx, "bot1", 1234); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMigration(ctx, "bot1", -100, -1001234); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "bot2", 7); err != nil {
		t.Fatal(err)
	}
	// A restart (a new store on the same backend) continues from there.
	again := newTelegramCursors(openCursors(t, state), filepath.Join(state, "telegram"), nil)
	if n, err := again.Load(ctx, "bot1"); err != nil || n != 1234 {
		t.Errorf("Load after restart = %d, %v; want 1234", n, err)
	}
	m, err := again.LoadMigrations(ctx, "bot1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int64]int64{-100: -1001234}, m); diff != "" {
		t.Errorf("LoadMigrations (-want +got):\n%s", diff)
	}
	if m, _ := again.LoadMigrations(ctx, "bot2"); len(m) != 0 {
		t.Errorf("bot2 has bot1's migrations: %v", m)
	}
	// They are the backend's cursors, scope telegram:<account>.
	all, err := c.CursorsOf(ctx, "telegram:bot1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"offset": "1234", "migration:-100": "-1001234"}, all); diff != "" {
		t.Errorf("cursors of telegram:bot1 (-want +got):\n%s", diff)
	}
	// A damaged value is an error naming it, not offset 0.
	if err := c.SetCursor(ctx, "telegram:bot3", "offset", "x1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "bot3"); err == nil || !strings.Contains(err.Error(), "x1") {
		t.Errorf("Load of a damaged offset = %v", err)
	}
}

// TestTelegramCursorsImportLegacyFiles: a daemon upgraded in place
// continues from the offset and migrations earlier releases saved under
// <stateDir>/telegram, once.
func TestTelegramCursorsImportLegacyFiles(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	legacyDir := filepath.Join(state, "telegram")
	old := telegram.FileOffsetStore(legacyDir)
	if err := old.Save(ctx, "bot1", 5000); err != nil {
		t.Fatal(err)
	}
	if err := old.SaveMigration(ctx, "bot1", -42, -10042); err != nil {
		t.Fatal(err)
	}
	s := newTelegramCursors(openCursors(t, state), legacyDir, zaptest.NewLogger(t))
	// The adapter loads migrations first (at start), then the offset.
	m, err := s.LoadMigrations(ctx, "bot1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int64]int64{-42: -10042}, m); diff != "" {
		t.Errorf("imported migrations (-want +got):\n%s", diff)
	}
	if n, err := s.Load(ctx, "bot1"); err != nil || n != 5000 {
		t.Fatalf("imported offset = %d, %v; want 5000", n, err)
	}
	if err := s.Save(ctx, "bot1", 5010); err != nil {
		t.Fatal(err)
	}
	// The legacy files are not read again: a stale one changes nothing.
	if err := old.Save(ctx, "bot1", 1); err != nil {
		t.Fatal(err)
	}
	again := newTelegramCursors(openCursors(t, state), legacyDir, nil)
	if n, err := again.Load(ctx, "bot1"); err != nil || n != 5010 {
		t.Errorf("offset after restart = %d, %v; want 5010", n, err)
	}
	// An account without legacy files starts at 0; a damaged legacy file
	// is an error (the adapter then starts from Telegram's own offset)
	// and is not marked imported.
	if n, err := again.Load(ctx, "bot2"); err != nil || n != 0 {
		t.Errorf("Load(bot2) = %d, %v", n, err)
	}
	if err := os.WriteFile(filepath.Join(legacyDir, "bot3.offset"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Load(ctx, "bot3"); err == nil {
		t.Error("Load with a damaged legacy file succeeded")
	}
	if err := os.WriteFile(filepath.Join(legacyDir, "bot3.offset"), []byte("77\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := again.Load(ctx, "bot3"); err != nil || n != 77 {
		t.Errorf("Load after the legacy file was fixed = %d, %v; want 77", n, err)
	}
}
