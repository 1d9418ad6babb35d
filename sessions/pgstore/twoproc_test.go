package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// childEnv makes the test binary a child process of
// TestTwoProcessesLoseNoUpdate; childURL and childSession tell it the
// database and the shared session.
const (
	childEnv     = "PGSTORE_TEST_CHILD"
	childURL     = "PGSTORE_TEST_URL"
	childSession = "PGSTORE_TEST_SESSION"
)

// twoProcG goroutines per process each make twoProcN rounds of updates.
const twoProcG, twoProcN = 6, 20

// TestTwoProcessesLoseNoUpdate: two OS processes (this one and a child of
// the test binary), each with its own pool, race on one entry (a patch of
// the same field, counters) and one transcript, and each creates its own
// sessions at the same time: no update is lost, every append gets its own
// sequence number, nothing is written twice.
func TestTwoProcessesLoseNoUpdate(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	st := db.Store("main", nil)
	k := mustKey(t, "main", "telegram", "shared")
	e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childURL+"="+url, childSession+"="+e.SessionID)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	perr := hammerPG(ctx, db, "parent", e.SessionID)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	if perr != nil {
		t.Fatal(perr)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Read back through a handle of its own, as a third process would.
	third, err := Open(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	want := 2 * twoProcG * twoProcN
	got, ok, err := third.Store("main", nil).Get(k)
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	if got.QueueCap != want || got.InputTokens != int64(want) {
		t.Errorf("queueCap %d inputTokens %d, want %d each: an update was lost", got.QueueCap, got.InputTokens, want)
	}
	list, err := third.Store("main", nil).List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1+want {
		t.Errorf("%d entries, want %d", len(list), 1+want)
	}
	entries, err := third.Load(ctx, e.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	seqs, ids := map[int64]bool{}, map[string]bool{}
	for _, te := range entries {
		if seqs[te.Seq] || ids[te.ID] {
			t.Fatalf("seq %d or id %s twice in the transcript", te.Seq, te.ID)
		}
		seqs[te.Seq], ids[te.ID] = true, true
	}
	for _, tag := range []string{"parent", "child"} {
		for g := range twoProcG {
			for n := range twoProcN {
				if id := fmt.Sprintf("%s-%d-%d", tag, g, n); !ids[id] {
					t.Errorf("transcript entry %s lost", id)
				}
			}
		}
	}
	for i := int64(1); i <= int64(len(entries)); i++ {
		if !seqs[i] {
			t.Errorf("transcript seq %d missing of %d: the sequence has a gap", i, len(entries))
			break
		}
	}
}

// runChild is the child process: the same updates as the parent's under
// its own tag, through a pool of its own.
func runChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := Open(ctx, Options{URL: os.Getenv(childURL)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer db.Close()
	if err := hammerPG(ctx, db, "child", os.Getenv(childSession)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	if err := db.Store("main", nil).Flush(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// hammerPG makes twoProcG goroutines each patch the shared entry's
// queueCap, add one input token to it, append one transcript entry to its
// session and create a session of its own, twoProcN times.
func hammerPG(ctx context.Context, db *DB, tag, sessionID string) error {
	st := db.Store("main", nil)
	k, err := routing.PeerKey("main", "telegram", "", routing.Group, "shared")
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for g := range twoProcG {
		wg.Go(func() {
			for n := range twoProcN {
				id := fmt.Sprintf("%s-%d-%d", tag, g, n)
				_, err := st.Patch(ctx, k, func(e *sessions.Entry) error { e.QueueCap++; return nil })
				if err == nil {
					body, _ := json.Marshal(map[string]any{"type": "message", "id": id})
					_, err = db.Append(ctx, sessionID, TranscriptEntry{ID: id, Type: "message", Body: body})
				}
				if err == nil {
					own, _ := routing.PeerKey("main", "web", "", routing.Direct, id)
					_, _, err = st.Begin(ctx, own, sessions.Origin{})
				}
				st.AddCounters(k, sessions.Counters{InputTokens: 1})
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", id, err))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}
