package filestore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// snapshotTo writes a Snapshot of stateDir into dst, as restore extracts it.
func snapshotTo(ctx context.Context, stateDir, dst string) (SnapshotStats, error) {
	return Snapshot(ctx, stateDir, 10*time.Second, func(f SnapshotFile) error {
		path := filepath.Join(dst, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		defer out.Close()
		if n, err := io.Copy(out, f.Body); err != nil || n != f.Size {
			return fmt.Errorf("copied %d of %d bytes: %v", n, f.Size, err)
		}
		return out.Close()
	})
}

// TestSnapshotWhileWriting takes snapshots of a state dir while another
// Manager (the daemon) creates, appends to, resets and deletes sessions
// and flushes counters every few milliseconds: every snapshot is sound
// (each index names no transcript the copy lacks, every transcript line
// parses, the journal reads), which needs the index and the transcripts
// taken together under the store lock and the appended files cut at a
// whole line.
func TestSnapshotWhileWriting(t *testing.T) {
	src := t.TempDir()
	m := openTestManager(t, src, Options{FlushInterval: 2 * time.Millisecond, CacheTTL: -1})
	st := mustStore(t, m, "main")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	writeErrs := make([]error, 4)
	for w := range writeErrs {
		wg.Add(1)
		go func() { // owned by the test: stopped by cancel, waited for below
			defer wg.Done()
			for i := 0; i < writerSteps && ctx.Err() == nil; i++ {
				if writeErrs[w] = writeSome(ctx, m, st, w, i); writeErrs[w] != nil {
					return
				}
			}
		}()
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }() // ends with the writers
	snaps := 0
	var longest time.Duration
	for ; snaps < 40 && (snaps < 3 || !isClosed(writing)); snaps++ {
		dst := t.TempDir()
		began := time.Now()
		stats, err := snapshotTo(context.Background(), src, dst)
		longest = max(longest, time.Since(began))
		if err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("snapshot %d: %v", snaps, err)
		}
		ps, err := CheckRestored(context.Background(), dst, sessions.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			switch p.Code {
			case sessions.CodeCounterLag, sessions.CodeJournalBacklog:
			default:
				cancel()
				wg.Wait()
				t.Fatalf("snapshot %d (%d files, %d transcripts): %s %s: %s", snaps, stats.Files, stats.Transcripts, p.Code, p.Path, p.Message)
			}
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d snapshots, the longest took %s", snaps, longest)
	for _, err := range writeErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// writerSteps bounds each writer of TestSnapshotWhileWriting: the
// snapshots run while they write.
const writerSteps = 200

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeSome is step i of writer w of TestSnapshotWhileWriting: a
// journaled message appended to one of the writer's five sessions, a reset every 7th
// step, a delete every 11th.
func writeSome(ctx context.Context, m *Manager, st *Store, w, i int) error {
	k, err := routing.PeerKey("main", "telegram", "", routing.Direct, fmt.Sprintf("peer-%d-%d", w, i%5))
	if err != nil {
		return err
	}
	switch {
	case i%11 == 10:
		return ignoreCancel(ctx, st.Delete(ctx, k))
	case i%7 == 6:
		_, err := st.Reset(ctx, k, sessions.ResetOptions{})
		if err != nil && ctx.Err() == nil {
			// Reset of a key deleted meanwhile: begin it instead.
			_, _, err = st.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "direct", At: time.Now()})
		}
		return ignoreCancel(ctx, err)
	}
	id := fmt.Sprintf("telegram:default:%d:%d", w, i)
	if _, err := m.Journal().Accept(ctx, sessions.Record{ID: id, AgentID: "main", SessionKey: k.String(), Payload: []byte(`{"text":"x"}`)}); err != nil {
		return ignoreCancel(ctx, err)
	}
	e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "direct", At: time.Now()})
	if err != nil {
		return ignoreCancel(ctx, err)
	}
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		return ignoreCancel(ctx, err)
	}
	u := sessions.UserText(fmt.Sprintf("message %d %s", i, strings.Repeat("y", i%300)), time.Now())
	u.RecordIDs = []string{id}
	if _, err := tr.Append(ctx, u, sessions.Message{Role: sessions.RoleAssistant,
		Content: []sessions.Content{{Type: sessions.BlockText, Text: "ok"}}, Timestamp: time.Now().UnixMilli()}); err != nil {
		return ignoreCancel(ctx, err)
	}
	st.AddCounters(k, sessions.Counters{Messages: 2})
	return ignoreCancel(ctx, m.Journal().Done(id))
}

func ignoreCancel(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
