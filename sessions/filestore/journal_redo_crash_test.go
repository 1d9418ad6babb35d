package filestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// childRedoWriter runs turns as the daemon does (journal open first, so
// replies are made durable by redo lines): each turn appends its input
// lazily and its reply durably, then prints "ACK <sessionId> <text>" for
// both. Some turns reset or delete their session (archiving the file).
func childRedoWriter(dir, round string) error {
	m, err := Open(Options{StateDir: dir, FlushInterval: 5 * time.Millisecond, CacheTTL: -1})
	if err != nil {
		return err
	}
	if err := m.Journal().Health(); err != nil {
		return err
	}
	s, err := m.Store("main")
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, "READY")
	var (
		wg   sync.WaitGroup
		outM sync.Mutex
	)
	for g := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				k, _ := routing.PeerKey("main", "telegram", "", routing.Direct, fmt.Sprintf("g%d-%d", g, i%3))
				e, _, err := s.Begin(ctx, k, sessions.Origin{Channel: "telegram", Title: "t"})
				if err != nil {
					fmt.Fprintln(os.Stderr, "begin:", err)
					return
				}
				tr, err := s.TranscriptOf(e)
				if err != nil {
					return
				}
				text := fmt.Sprintf("r%s-g%d-i%d", round, g, i)
				if _, err := tr.AppendLazy(ctx, sessions.UserText("q-"+text, time.Now())); err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					return
				}
				if _, err := tr.Append(ctx, replyText(text)); err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					return
				}
				outM.Lock()
				fmt.Fprintf(os.Stdout, "ACK %s q-%s\nACK %s %s\n", e.SessionID, text, e.SessionID, text)
				outM.Unlock()
				switch i % 13 {
				case 6:
					_, err = s.Reset(ctx, k, sessions.ResetOptions{Manual: true})
				case 12:
					err = s.Delete(ctx, k)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "op:", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return m.Close()
}

// losePower does to the state dir what a power loss after the child's
// death could: every transcript the journal holds redo lines for loses
// the bytes after its last fsync (the first redo line's offset), cut at a
// random point, sometimes with a torn line or never-written pages after.
func losePower(t *testing.T, dir string) (cut int) {
	t.Helper()
	floors := map[string]int64{}
	for _, l := range redoLines(t, dir) {
		if f, ok := floors[l.Path]; !ok || l.Off < f {
			floors[l.Path] = l.Off
		}
	}
	for rel, floor := range floors {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		b, err := os.ReadFile(path)
		if err != nil || int64(len(b)) < floor {
			continue // archived or deleted since
		}
		at := floor + rand.Int64N(int64(len(b))-floor+1)
		kept := b[:at]
		switch rand.IntN(3) {
		case 1:
			kept = append(kept, `{"type":"message","id":"torn`...)
		case 2:
			kept = append(kept, make([]byte, int64(len(b))-at)...)
		}
		if err := os.WriteFile(path, kept, 0o600); err != nil {
			t.Fatal(err)
		}
		cut++
	}
	return cut
}

// TestCrashRedoSurvivesPowerLoss SIGKILLs a daemon-like writer at random
// moments (some while it opens the state dir, replaying redo lines), then
// takes from each transcript what a power loss could, and checks that every
// acknowledged message is back after the next start and every file loads.
func TestCrashRedoSurvivesPowerLoss(t *testing.T) {
	dir := t.TempDir()
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	acked := map[string][]string{}
	cuts := 0
	for r := range rounds {
		cmd, out := startChild(t, "redo", dir, strconv.Itoa(r))
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			for {
				l, err := out.ReadString('\n')
				if err != nil {
					return
				}
				lines <- l
			}
		}()
		if r%5 != 4 {
			waitReady(t, cmd, lines)
		}
		time.Sleep(time.Duration(20+rand.IntN(150)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "ACK" {
				acked[f[1]] = append(acked[f[1]], f[2])
			}
		}
		_ = cmd.Wait()
		cuts += losePower(t, dir)
	}
	if len(acked) == 0 {
		t.Fatal("the child acknowledged nothing")
	}
	if cuts == 0 {
		t.Fatal("no transcript had redo lines to lose")
	}
	f := openRedoFixture(t, dir)
	defer f.m.Close()
	files, _ := filepath.Glob(filepath.Join(f.s.Dir(), "*.jsonl*"))
	have := map[string]map[string]bool{}
	for _, p := range files {
		id := strings.SplitN(filepath.Base(p), ".", 2)[0]
		if strings.HasSuffix(p, ".lock") || strings.HasSuffix(p, ".tmp") || len(id) != 36 {
			continue // not a transcript (the index's change log)
		}
		if have[id] == nil {
			have[id] = map[string]bool{}
		}
		for _, txt := range historyTexts(t, p) { // fails on a file that does not load
			have[id][txt] = true
		}
	}
	total := 0
	for id, texts := range acked {
		for _, txt := range texts {
			total++
			if !have[id][txt] {
				t.Errorf("acknowledged message %s of session %s lost", txt, id)
			}
		}
	}
	t.Logf("%d rounds, %d acknowledged messages in %d sessions, %d transcripts cut", rounds, total, len(acked), cuts)
}
