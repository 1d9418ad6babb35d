package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions/filestore"
)

// fakeDrafter records draft calls with the (fake) time they were made;
// limited says which edit numbers (from 1) answer with a retry_after.
type fakeDrafter struct {
	channels.Adapter
	mu      sync.Mutex
	calls   []draftCall
	edits   int
	limited map[int]time.Duration
}

type draftCall struct {
	Op   string
	Text string
	At   time.Time
}

type retryErr time.Duration

func (e retryErr) Error() string             { return "429" }
func (e retryErr) RetryDelay() time.Duration { return time.Duration(e) }

func (f *fakeDrafter) record(op, text string) {
	f.calls = append(f.calls, draftCall{Op: op, Text: text, At: time.Now()})
}

func (f *fakeDrafter) SendDraft(ctx context.Context, out channels.Outbound, text string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("post", text)
	return "9", nil
}

func (f *fakeDrafter) EditDraft(ctx context.Context, out channels.Outbound, id, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.edits++
	if ra, ok := f.limited[f.edits]; ok {
		f.record("429", text)
		return retryErr(ra)
	}
	f.record("edit", text)
	return nil
}

func (f *fakeDrafter) DeleteDraft(ctx context.Context, out channels.Outbound, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("delete", "")
	return nil
}

// TestStreamEditsSpacedLatestWins runs a progress stream in fake time: a
// tool step every 100 ms for 8 s. Edits are at least a second apart (and
// a second after the post), the one after a 429 waits its retry_after,
// each shows the latest step at its time, and the draft is deleted.
func TestStreamEditsSpacedLatestWins(t *testing.T) {
	mgr, err := filestore.Open(filestore.Options{StateDir: t.TempDir(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	journal := mgr.Journal() // opened outside the bubble: its goroutine is not part of it
	synctest.Test(t, func(t *testing.T) {
		d := &Dispatcher{log: zap.NewNop(), life: context.Background(), journal: journal,
			opts: Options{Metrics: NewMetrics(nil), Now: time.Now}}
		fd := &fakeDrafter{limited: map[int]time.Duration{2: 2500 * time.Millisecond}}
		out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "1"}}
		room := channels.Room{Streaming: channels.StreamProgress}
		start := time.Now()
		s := d.startStream(context.Background(), fd, out, room, routing.Key{Agent: "main", Main: "main"})
		type step struct {
			at   time.Duration
			text string
		}
		var steps []step
		time.Sleep(50 * time.Millisecond) // steps fall between the edits' whole seconds
		for i := range 80 {
			name := fmt.Sprintf("tool%02d", i)
			s.onStep(agents.Step{Kind: agents.StepTool, Tool: name})
			steps = append(steps, step{time.Since(start), "Using " + name + "…"})
			time.Sleep(100 * time.Millisecond)
		}
		latest := func(at time.Duration) string {
			text := statusThinking
			for _, st := range steps {
				if st.at <= at {
					text = st.text
				}
			}
			return text
		}
		s.stop()
		s.finish()

		calls := fd.calls
		if calls[0].Op != "post" || calls[0].Text != latest(calls[0].At.Sub(start)) || calls[0].At.Sub(start) != progressDelay {
			t.Fatalf("first call %+v", calls[0])
		}
		last := calls[0].At
		var edits []draftCall
		for _, c := range calls[1 : len(calls)-1] {
			if gap := c.At.Sub(last); gap < editEvery {
				t.Errorf("%s %v after the previous call", c.Op, gap)
			}
			if c.Op == "edit" {
				edits = append(edits, c)
				// The latest step at the edit's time.
				at := c.At.Sub(start)
				if want := latest(at); c.Text != want {
					t.Errorf("edit at %v shows %q, want the latest %q", at, c.Text, want)
				}
			}
			if c.Op == "429" {
				last = c.At.Add(2500*time.Millisecond - editEvery)
			} else {
				last = c.At
			}
		}
		if n := len(edits); n < 3 || n > 6 {
			t.Errorf("%d edits in 8 s with a 2.5 s retry_after", n)
		}
		if end := calls[len(calls)-1]; end.Op != "delete" {
			t.Errorf("last call %+v, want the delete", end)
		}
		t.Logf("calls: %+v", calls)
	})
}

// TestStreamEditsSpacedPerChatAcrossTurns: two turns streaming into one
// chat at once (two forum topics of a group) share its edit spacing; a
// turn in another chat does not wait for them.
func TestStreamEditsSpacedPerChatAcrossTurns(t *testing.T) {
	mgr, err := filestore.Open(filestore.Options{StateDir: t.TempDir(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	journal := mgr.Journal()
	synctest.Test(t, func(t *testing.T) {
		d := &Dispatcher{log: zap.NewNop(), life: context.Background(), journal: journal,
			opts: Options{Metrics: NewMetrics(nil), Now: time.Now}}
		room := channels.Room{Streaming: channels.StreamProgress}
		group := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-100"}}
		a, b, other := &fakeDrafter{}, &fakeDrafter{}, &fakeDrafter{}
		ta, tb := group, group
		ta.ThreadID, tb.ThreadID = "3", "4"
		streams := []*draftStream{
			d.startStream(context.Background(), a, ta, room, routing.Key{Agent: "main", Main: "k1"}),
			d.startStream(context.Background(), b, tb, room, routing.Key{Agent: "main", Main: "k2"}),
			d.startStream(context.Background(), other, channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "7"}}, room, routing.Key{Agent: "main", Main: "k3"}),
		}
		for i := range 60 {
			for _, s := range streams {
				s.onStep(agents.Step{Kind: agents.StepTool, Tool: fmt.Sprintf("t%d", i)})
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, s := range streams {
			s.stop()
		}
		var shared []time.Time
		for _, c := range append(a.calls, b.calls...) {
			if c.Op == "edit" {
				shared = append(shared, c.At)
			}
		}
		slices.SortFunc(shared, func(x, y time.Time) int { return x.Compare(y) })
		for i := 1; i < len(shared); i++ {
			if gap := shared[i].Sub(shared[i-1]); gap < editEvery {
				t.Errorf("the group got two edits %v apart", gap)
			}
		}
		otherEdits := 0
		for _, c := range other.calls {
			if c.Op == "edit" {
				otherEdits++
			}
		}
		// 6 s: posts at 1 s, then about one edit a second, shared or not.
		if len(shared) < 3 || len(shared) > 6 || otherEdits < 3 {
			t.Errorf("%d edits in the shared chat, %d in the other: want both to advance at 1/s", len(shared), otherEdits)
		}
		t.Logf("%d edits in the shared chat, %d in the other", len(shared), otherEdits)
		for _, s := range streams {
			s.finish()
		}
	})
}
