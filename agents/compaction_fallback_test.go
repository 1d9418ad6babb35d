package agents

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// TestCompactionSummaryFallsBackToTheNextModel: a compaction while the
// primary model is down has its summary written by the fallback model, as
// the turn's answer is; it is not replaced by the plain "Summary
// unavailable" note, which made the session forget its whole earlier
// history for good during a primary outage the fallback covered.
func TestCompactionSummaryFallsBackToTheNextModel(t *testing.T) {
	rig := newFallbackRig(t, Agent{ID: "main"})
	for _, s := range []string{"one", "two", "three"} {
		if _, err := rig.run(t, s); err != nil {
			t.Fatal(err)
		}
	}
	rig.primary.SetReply(func(int, openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Status: 503, RetryAfter: "0"}
	})
	k := rig.h.key("main", "1")
	if err := rig.h.r.Compact(context.Background(), "main", k, ""); err != nil {
		t.Fatal(err)
	}
	c, err := rig.h.transcript("main", k).Context(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(c.Summary, "Summary unavailable") || !strings.HasPrefix(c.Summary, "reply: ") {
		t.Fatalf("summary %q, want the backup model's", c.Summary)
	}
	if len(rig.backup.Requests()) == 0 {
		t.Fatal("the backup model was never asked")
	}
}
