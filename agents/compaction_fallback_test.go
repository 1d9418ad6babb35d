package agents

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
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

// TestMemoryFlushFallsBackToTheNextModel: the memory flush before a
// compaction goes down the model chain as the summary does: during a
// primary outage the fallback model is asked to save what is about to be
// summarised, instead of the flush failing and the notes being lost.
func TestMemoryFlushFallsBackToTheNextModel(t *testing.T) {
	d := Defaults{Model: Model{Primary: "fake/model-1", Fallbacks: []string{"fake/model-2"}}}
	k := openDisk(t, t.TempDir(), d, []Agent{memAgent}, &fakeProvider{name: "fake"})
	key := mustKey(t, "main", "main")
	k.begin("main", key)
	for _, text := range []string{"my dog is called Rex", "I work nights", "what time is it?"} {
		memTurn(t, k, key, alice, text)
	}
	var flushedBy []string
	k.p.summary = func(req llm.Request) (string, error) { return "they talked about a dog", nil }
	k.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if req.Model == "model-1" {
			return sessions.Message{}, llm.WithStatus(503, errors.New("primary down"))
		}
		if strings.Contains(lastUserText(req.Messages), "about to be compacted") {
			flushedBy = append(flushedBy, req.Model)
		}
		return assistantText(memoryFlushDone), nil
	}
	if err := k.r.CompactFor(context.Background(), "main", key, "", alice); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(flushedBy, []string{"model-2"}) {
		t.Fatalf("the flush was asked of %q, want the fallback model-2 once", flushedBy)
	}
}
