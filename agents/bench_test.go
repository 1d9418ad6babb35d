package agents

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
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
