package filestore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// childJournal accepts and finishes records from four goroutines on a
// journal rewritten every few kilobytes, printing "ACC <id>" once Accept
// returned (durable) and "DONE <id>" once Done did (written to the kernel,
// which outlives the process).
func childJournal(dir, round string) error {
	j := openJournal(dir, time.Now, zap.NewNop())
	if j.openErr != nil {
		return j.openErr
	}
	var outM sync.Mutex
	say := func(f string, a ...any) {
		outM.Lock()
		fmt.Fprintf(os.Stdout, f+"\n", a...)
		outM.Unlock()
	}
	j.mu.Lock()
	j.compactMin, j.compactMax = 8<<10, 8<<10
	j.rewriteHook = func() { say("REWRITE") } // between its write and its install
	j.mu.Unlock()
	fmt.Fprintln(os.Stdout, "READY")
	payload, _ := json.Marshal(strings.Repeat("p", 300))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				if _, err := j.Accept(context.Background(), sessions.Record{ID: id, Payload: payload}); err != nil {
					fmt.Fprintln(os.Stderr, "accept:", err)
					return
				}
				say("ACC %s", id)
				if i%20 == 19 {
					continue // left pending
				}
				if err := j.Done(id); err != nil {
					fmt.Fprintln(os.Stderr, "done:", err)
					return
				}
				say("DONE %s", id)
			}
		})
	}
	wg.Wait()
	return j.close()
}

// TestJournalRewriteCrashAnyInstant SIGKILLs a process whose journal is
// rewritten every few kilobytes (the rewrite runs beside the writes) at
// random moments: the journal always loads, every record whose Accept
// returned is remembered, and none whose Done returned is pending again.
func TestJournalRewriteCrashAnyInstant(t *testing.T) {
	dir := t.TempDir()
	rounds := 20
	if testing.Short() {
		rounds = 6
	}
	accepted, done := map[string]bool{}, map[string]bool{}
	rewrites := 0
	for r := range rounds {
		cmd, out := startChild(t, "journal", dir, strconv.Itoa(r))
		lines := childLines(out)
		waitReady(t, cmd, lines)
		time.Sleep(time.Duration(30+rand.IntN(150)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			switch f := strings.Fields(l); {
			case len(f) == 2 && f[0] == "ACC":
				accepted[f[1]] = true
			case len(f) == 2 && f[0] == "DONE":
				done[f[1]] = true
			case len(f) == 1 && f[0] == "REWRITE":
				rewrites++
			}
		}
		_ = cmd.Wait()
	}
	if len(done) == 0 || rewrites == 0 {
		t.Fatalf("the child finished %d records in %d rewrites", len(done), rewrites)
	}
	j := openTestJournal(t, dir, nil)
	pending := map[string]bool{}
	recs, err := j.Pending()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		pending[r.ID] = true
	}
	for id := range accepted {
		switch {
		case done[id] && pending[id]:
			t.Errorf("record %s is pending again after its Done returned", id)
		case !done[id] && !pending[id]:
			if dup, err := j.Accept(context.Background(), sessions.Record{ID: id}); err != nil || !dup {
				t.Errorf("accepted record %s lost (Accept again: %v, %v)", id, dup, err)
			}
		}
	}
	for id := range done {
		if dup, err := j.Accept(context.Background(), sessions.Record{ID: id}); err != nil || !dup {
			t.Errorf("finished record %s forgotten (Accept again: %v, %v)", id, dup, err)
		}
	}
	t.Logf("%d rounds, %d rewrites, %d accepted, %d finished, %d pending", rounds, rewrites, len(accepted), len(done), len(recs))
}
