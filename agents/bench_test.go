package agents

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// BenchmarkCompact100k compacts a ~100k-token history (with tool calls)
// against an instant model: planning, staged summary prompts, the merge and
// the append.
func BenchmarkCompact100k(b *testing.B) {
	var msgs []sessions.Message
	for i := 0; llm.EstimateMessages(msgs) < 100000; i++ {
		msgs = append(msgs, user(fmt.Sprintf("question %d %s", i, strings.Repeat("q", 800))),
			assistantCall(fmt.Sprintf("c%d", i), "sessions_list", map[string]int{"limit": i}),
			toolResult(fmt.Sprintf("c%d", i), strings.Repeat("r", 600)),
			assistantText(strings.Repeat("a", 900)))
	}
	base := &memTranscript{}
	base.Append(context.Background(), msgs...)
	h := newHarnessWith(b, Defaults{ContextWindow: 128000}, []Agent{{ID: "main"}}, nil, nil)
	k := h.key("main", "bench")
	s, err := h.r.open("main", k)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(llm.EstimateMessages(msgs)), "tokens")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tr := &memTranscript{lines: base.lines[:len(base.lines):len(base.lines)]}
		s.tr = tr
		if _, err := h.r.compact(context.Background(), s, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.p.summaryRequests())/float64(b.N), "model-calls/op")
}

// usageProvider answers every call at once with a short reply and the
// usage a real provider reports (so the runner estimates none).
type usageProvider struct{}

func (usageProvider) Name() string { return "fake" }

func (usageProvider) Stream(context.Context, llm.Request, func(llm.Event)) (sessions.Message, error) {
	m := assistantText("a short answer to the question")
	m.Usage = &sessions.Usage{Input: 1000, Output: 10}
	return m, nil
}

// BenchmarkRunnerTurn is one turn (one input, one model call, one reply)
// of a files backend session whose history holds about history messages
// of a chat's length, against an instant model: what the runner and the
// transcript cost per turn as a session grows (issue 21). Sessions are
// rotated so the history stays within 20 messages of its size.
func BenchmarkRunnerTurn(b *testing.B) {
	for _, n := range []int{150, 500} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) { benchTurn(b, n) })
	}
}

func benchTurn(b *testing.B, history int) {
	mgr, err := filestore.Open(filestore.Options{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mgr.Close() })
	r, err := NewRunner(Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": usageProvider{}},
		Defaults: Defaults{Model: Model{Primary: "fake/m"}, ContextWindow: 400000}, Agents: []Agent{{ID: "main"}}})
	if err != nil {
		b.Fatal(err)
	}
	st, err := mgr.Store("main")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const sessionsN, turnsEach = 32, 10
	keys := make([]routing.Key, sessionsN)
	used := make([]int, sessionsN)
	next := 0
	fresh := func(i int) {
		next++
		keys[i], _ = routing.PeerKey("main", "telegram", "", routing.Direct, fmt.Sprint(next))
		e, _, err := st.Begin(ctx, keys[i], sessions.Origin{Channel: "telegram", At: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		tr, err := st.TranscriptOf(e)
		if err != nil {
			b.Fatal(err)
		}
		msgs := make([]sessions.Message, 0, history)
		for j := 0; len(msgs) < history; j++ {
			msgs = append(msgs, sessions.UserText(fmt.Sprintf("question %d: %s", j, strings.Repeat("how about this ", 5)), time.Now()),
				assistantText(fmt.Sprintf("answer %d: %s", j, strings.Repeat("well, it is so ", 6))))
		}
		if _, err := tr.Append(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.Context(ctx); err != nil { // loaded, as a live session's is
			b.Fatal(err)
		}
		used[i] = 0
	}
	for i := range keys {
		fresh(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s := i % sessionsN
		i++
		if used[s] == turnsEach {
			b.StopTimer()
			fresh(s)
			b.StartTimer()
		}
		used[s]++
		e, _, err := st.Begin(ctx, keys[s], sessions.Origin{Channel: "telegram", At: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Run(ctx, Turn{AgentID: "main", Key: keys[s], Entry: &e,
			Inputs: []sessions.Message{sessions.UserText("and one more question for you", time.Now())}}); err != nil {
			b.Fatal(err)
		}
	}
}
