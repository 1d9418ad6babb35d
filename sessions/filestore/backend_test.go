package filestore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestFilesStatusPassive: the daemon's Status probes its journal; a
// passive Manager beside it (the CLI's doctor) reports the state dir
// without taking the journal the daemon holds, and a state dir that
// cannot be read is reported.
func TestFilesStatusPassive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	daemon, err := Open(Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	if st := daemon.Backend().Status(ctx); st.Kind != "files" || st.Location != dir || st.Err != "" {
		t.Errorf("daemon Status = %+v, want files at %s without error", st, dir)
	}
	cli, err := Open(Options{StateDir: dir, Passive: true, CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if st := cli.Backend().Status(ctx); st.Kind != "files" || st.Location != dir || st.Err != "" {
		t.Errorf("passive Status beside the daemon = %+v, want files at %s without error", st, dir)
	}
	if err := daemon.Journal().Health(); err != nil {
		t.Errorf("the daemon's journal after a passive Status: %v", err)
	}

	gone := filepath.Join(t.TempDir(), "gone")
	p, err := Open(Options{StateDir: gone, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if st := p.Backend().Status(ctx); st.Err == "" {
		t.Errorf("Status of a removed state dir = %+v, want an error", st)
	}
}
