package dispatch

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// disk is a journal file layer that can be "full": writes then put half of
// their bytes on disk and fail with ENOSPC, as a nearly full filesystem does.
type disk struct{ full atomic.Bool }

type diskFile struct {
	*os.File
	d *disk
}

func (f diskFile) Write(b []byte) (int, error) {
	if f.d.full.Load() {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(b)
}

func (d *disk) open(path string) (filestore.JournalFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return diskFile{File: f, d: d}, nil
}

// copyDir copies the state dir as a SIGKILL at this instant leaves it.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if de.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDiskFullNothingLostNothingTwice: fill the disk while a turn runs and
// messages arrive, free it, kill the process, restart. New messages are
// refused while the disk is full (and accepted when redelivered after);
// the running turn's reply is delivered; its marks wait in memory and are
// written once space returns, with no restart; after the kill nothing is
// answered again and nothing is missing.
func TestDiskFullNothingLostNothingTwice(t *testing.T) {
	d := &disk{}
	m := &model{}
	h := newHarness(t, "", m, func(h *harness) { h.open = d.open })
	h.handle(in("tg", "20", "one"))
	h.drained()

	block := make(chan struct{})
	m.mu.Lock()
	m.block, m.started = block, make(chan struct{}, 4)
	m.mu.Unlock()
	h.handle(in("tg", "20", "two"))
	<-m.started
	d.full.Store(true)
	three := in("tg", "21", "three")
	err := h.d.Handle(h.ctx, three)
	if !errors.Is(err, channels.ErrUnavailable) || !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("message while the disk is full: %v, want a refusal naming the storage", err)
	}
	if h.journal().Health() == nil {
		t.Fatal("journal healthy while its writes fail")
	}
	m.mu.Lock()
	m.block, m.started = nil, nil
	m.mu.Unlock()
	close(block)
	eventually(t, "the reply to the running turn", func() bool { return len(h.tg.sent()) == 2 })

	d.full.Store(false)
	eventually(t, "the journal to recover by itself", func() bool { return h.journal().Health() == nil })
	h.drained()
	h.handle(three) // the platform redelivers what was refused
	h.drained()

	killed := t.TempDir()
	copyDir(t, h.dir, killed)
	rep, err := filestore.InspectJournal(killed)
	if err != nil || len(rep.BadLines) != 0 || rep.TornTail || rep.Pending != 0 || rep.Replies != 0 {
		t.Fatalf("journal after the fill: %+v %v", rep, err)
	}
	h2 := newHarness(t, killed, m)
	h2.tg = h.tg
	h2.d.Register(h.tg)
	if n, err := h2.d.Resume(h2.ctx); err != nil || n != 0 {
		t.Fatalf("resumed %d (%v) after a kill with everything answered", n, err)
	}
	h2.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: one", "re: two", "re: three"}) {
		t.Fatalf("delivered %q", got)
	}
}
