package agents

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gateway/gateway/sessions"
)

// restartRunner is a new Runner over h's stores and options, as a daemon
// restarted on the same storage builds: nothing of h.r's memory carries
// over.
func restartRunner(t *testing.T, h *harness) *Runner {
	t.Helper()
	restarted, err := newRunner(h.r.opts)
	if err != nil {
		t.Fatal(err)
	}
	restarted.stores, restarted.now = h.r.stores, h.r.now
	return restarted
}

// TestSubagentCleanupSurvivesRestart (issue 27): a child spawned with
// cleanup delete whose run ends after a restart is still deleted once it
// has reported: the option is stored with the child's entry, not only in
// the spawning process's memory.
func TestSubagentCleanupSurvivesRestart(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	h.p.reply = scripted(map[string]any{"task": "quick job", "cleanup": "delete", "runTimeoutSeconds": 45})
	parent := h.key("main", "7")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("go")}}); err != nil {
		t.Fatal(err)
	}
	d := h.dispatches()[0]
	e, ok, _ := h.stores["main"].Get(d.Key)
	if !ok || e.SubagentCleanup != sessions.CleanupDelete || e.RunTimeoutSeconds != 45 {
		t.Fatalf("child entry %+v, want cleanup delete and a 45 s run timeout stored", e)
	}

	restarted := restartRunner(t, h)
	res, err := restarted.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message}})
	if err != nil || res.Text != "child result for: quick job" {
		t.Fatalf("child after restart: %q, %v", res.Text, err)
	}
	if ds := h.dispatches(); len(ds) != 2 || !strings.Contains(ds[1].Message.Text(), "status: done") {
		t.Fatalf("announcement = %+v", ds)
	}
	if e, ok, _ := h.stores["main"].Get(d.Key); ok {
		t.Fatalf("child with cleanup delete kept after a restart: %+v", e)
	}
}

// TestSubagentRunTimeoutSurvivesRestart (issue 27): a child's
// runTimeoutSeconds holds across a restart and counts from the run's first
// start: a run of 30 s stopped by a shutdown after 20 s times out 10 s
// into its resumed run (not after the agent's default turn timeout, nor 30
// s after the restart), and the parent hears it timed out.
func TestSubagentRunTimeoutSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := slowChild(t, true) // the bubble's clock, which the waits below move

		// The first run is cut short by a shutdown 20 s in.
		stop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := h.r.Run(stop, Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message}})
		cancel()
		if err == nil {
			t.Fatal("a child stopped by shutdown reported success")
		}
		if ds := h.dispatches(); len(ds) != 1 {
			t.Fatalf("a child stopped by shutdown announced: %+v", ds)
		}

		restarted := restartRunner(t, h)
		resumed := time.Now()
		if _, err := restarted.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Reuse: true}); err == nil {
			t.Fatal("a timed-out child reported success")
		}
		if got := time.Since(resumed); got != 10*time.Second {
			t.Errorf("resumed run timed out after %s, want the 10 s left of its 30 s", got)
		}
		ds := h.dispatches()
		if len(ds) != 2 || !strings.Contains(ds[1].Message.Text(), "status: timed out") || !strings.Contains(ds[1].Message.Text(), "within 30s") {
			t.Fatalf("announcement = %+v", ds)
		}
		if e, ok, _ := h.stores["main"].Get(d.Key); !ok || e.RunStartedAt != 0 {
			t.Errorf("child after its run: %+v, %v; want kept (cleanup keep) with no run start", e, ok)
		}
	})
}

// TestSubagentStoppedForGoodForgetsStart: a child's run stopped for good
// (/stop, an interrupting message: Turn.Stopped says so) forgets when it
// began, so the next run sent into the child gets its whole timeout
// instead of the time left of the stopped one. A run stopped by a
// shutdown keeps its start (TestSubagentRunTimeoutSurvivesRestart).
func TestSubagentStoppedForGoodForgetsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := slowChild(t, true) // the bubble's clock, which the waits below move

		// The first run is stopped for good 20 s in.
		stop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := h.r.Run(stop, Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message}, Stopped: func() bool { return true }})
		cancel()
		if err == nil {
			t.Fatal("a stopped child reported success")
		}
		if e, ok, _ := h.stores["main"].Get(d.Key); !ok || e.RunStartedAt != 0 {
			t.Fatalf("child after a stop for good: %+v, %v; want kept with no run start", e, ok)
		}

		// The next run into the child counts its 30 s from its own start.
		again := time.Now()
		if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{user("try again")}}); err == nil {
			t.Fatal("a blocked child reported success")
		}
		if got := time.Since(again); got != 30*time.Second {
			t.Errorf("the next run timed out after %s, want its whole 30 s", got)
		}
	})
}

// slowChild spawns, from parent "7", a child with a 30 s run timeout
// whose model calls then block (blockChildren), and returns its dispatch
// (the child's key and task message). setClock makes the runner read the
// clock a synctest bubble moves.
func slowChild(t *testing.T, setClock bool) (*harness, Dispatch) {
	t.Helper()
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	if setClock {
		h.r.now = time.Now
	}
	h.p.reply = scripted(map[string]any{"task": "slow job", "runTimeoutSeconds": 30})
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "7"), Inputs: []sessions.Message{user("go")}}); err != nil {
		t.Fatal(err)
	}
	h.r.opts.Providers["fake"] = blockChildren{h.p}
	return h, h.dispatches()[0]
}
