package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// TestRunawaySummaryIsBounded: a model that loops while summarising (a
// local model repeating itself until its output limit) returns a summary
// larger than the window. Stored whole, it was sent first in every
// request, could not fit, and was itself left out of the next summary as
// oversized: what it said was lost. The stored summary is cut to a fifth
// of the window, so the next turn is answered with its beginning in the
// request and no second compaction.
func TestRunawaySummaryIsBounded(t *testing.T) {
	const window = 40000
	srv, p := fakeOpenAI(t)
	summaries := 0
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		size := 0
		for _, m := range r.Body.Messages {
			size += len(m.Content)
		}
		if size/4 > window {
			return openaitest.Reply{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "maximum context length is 40000 tokens"}
		}
		if r.Body.Messages[0].Content == summarySystemPrompt {
			if summaries++; summaries == 1 {
				return openaitest.Reply{Text: "The door code is 4711. " + strings.Repeat("The user likes tea. ", 15000)}
			}
			if strings.Contains(r.LastUserText(), "4711") {
				return openaitest.Reply{Text: "The door code is 4711."}
			}
			return openaitest.Reply{Text: "Nothing to note."}
		}
		return openaitest.DefaultReply(n, r)
	})
	h := newHarnessWith(t, Defaults{ContextWindow: window}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}}}, nil,
		map[string]llm.Provider{"oa": p})
	k := h.key("main", "1")
	ctx := context.Background()
	for i := range 3 {
		if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(fmt.Sprintf("message %d: the door code is 4711", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.r.Compact(ctx, "main", k, ""); err != nil {
		t.Fatal(err)
	}
	c, _ := h.transcript("main", k).Context(ctx)
	if n := llm.EstimateText(c.Summary); n > window/5 || !strings.HasPrefix(c.Summary, "The door code is 4711.") {
		t.Fatalf("stored summary of %d tokens (%.40q), want its start within a fifth of the %d window", n, c.Summary, window)
	}
	srv.Forget()
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if r.Body.Messages[0].Content == summarySystemPrompt {
			summaries++
			return openaitest.Reply{Text: "Nothing to note."}
		}
		all := ""
		for _, m := range r.Body.Messages {
			all += m.Content
		}
		if len(all)/4 > window {
			return openaitest.Reply{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "maximum context length is 40000 tokens"}
		}
		if strings.Contains(all, "4711") {
			return openaitest.Reply{Text: "The code is 4711."}
		}
		return openaitest.Reply{Text: "I don't know."}
	})
	before := summaries
	res, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("what is the door code?")}})
	if err != nil || res.Text != "The code is 4711." {
		t.Fatalf("next turn: %q, %v (%q)", res.Text, err, UserMessage(err))
	}
	if summaries != before {
		t.Errorf("%d more summary calls, want the bounded summary kept", summaries-before)
	}
}

// TestFailedMergeKeepsThePartialSummaries: a long history is summarised
// in chunks and the partial summaries merged by one more call. When only
// that merge failed (its prompt too long for the model, a timeout, an
// empty answer), every partial summary was thrown away and the session
// was left with the plain "Summary unavailable" note. The partial
// summaries, joined in order, are the summary then.
func TestFailedMergeKeepsThePartialSummaries(t *testing.T) {
	var msgs []sessions.Message
	for i := range 40 {
		msgs = append(msgs, user(fmt.Sprintf("m%d %s", i, strings.Repeat("z", 4000))))
	}
	n := 0
	call := func(_ context.Context, prompt string) (string, error) {
		if strings.HasPrefix(prompt, "Merge these partial summaries") {
			return "", errors.New("maximum context length exceeded")
		}
		n++
		return fmt.Sprintf("partial %d", n), nil
	}
	s, fb := summarize(context.Background(), call, msgs, 40000, "")
	if !fb || !strings.Contains(s, "partial 1") || !strings.Contains(s, fmt.Sprintf("partial %d", n)) || strings.Contains(s, "Summary unavailable") {
		t.Fatalf("summary %q (fallback %v), want the %d partial summaries", s, fb, n)
	}
	if strings.Index(s, "partial 1\n") > strings.Index(s, "partial 2") {
		t.Fatalf("partial summaries out of order: %q", s)
	}
}

// TestFailedChunkLosesOnlyItsPart: one chunk of a staged summary is
// refused (a provider's content filter on one stretch of a group chat)
// while the others are summarised. The whole compaction fell back to the
// plain "Summary unavailable" note, losing every other part; now only
// that part is left out, and the summary says so.
func TestFailedChunkLosesOnlyItsPart(t *testing.T) {
	var msgs []sessions.Message
	for i := range 40 {
		msgs = append(msgs, user(fmt.Sprintf("m%d %s", i, strings.Repeat("z", 4000))))
	}
	call := func(_ context.Context, prompt string) (string, error) {
		switch {
		case strings.HasPrefix(prompt, "Merge these partial summaries"):
			if strings.Contains(prompt, "facts of m0") && strings.Contains(prompt, "facts of m39") {
				return "merged: m0 and m39", nil
			}
			return "merged without the ends", nil
		case strings.Contains(prompt, "m20 "):
			return "", errors.New("400 content_filter: the request was filtered")
		}
		first := prompt[strings.Index(prompt, "User: ")+6:]
		last := prompt[strings.LastIndex(prompt, "User: ")+6:]
		return "facts of " + first[:strings.IndexByte(first, ' ')] + " to " + last[:strings.IndexByte(last, ' ')] +
			" and facts of " + last[:strings.IndexByte(last, ' ')], nil
	}
	s, fb := summarize(context.Background(), call, msgs, 40000, "")
	if !fb || !strings.HasPrefix(s, "merged: m0 and m39") || !strings.Contains(s, "left out") {
		t.Fatalf("summary %q (fallback %v), want the other parts merged and the failed part noted", s, fb)
	}
}

// TestSummaryTimeoutKeepsTheDoneParts: a slow model (a local one) runs
// out of compaction.timeoutSeconds in the middle of a staged summary.
// Every part already summarised was thrown away for the plain "Summary
// unavailable" note, so a long history on a slow model never got a
// summary at all; the parts done are kept, the rest noted as left out.
func TestSummaryTimeoutKeepsTheDoneParts(t *testing.T) {
	var msgs []sessions.Message
	for i := range 40 {
		msgs = append(msgs, user(fmt.Sprintf("m%d %s", i, strings.Repeat("z", 4000))))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	n := 0
	call := func(ctx context.Context, prompt string) (string, error) {
		if n++; n == 3 {
			cancel(context.DeadlineExceeded) // the compaction's time is up during the third call
			return "", context.Cause(ctx)
		}
		return fmt.Sprintf("part summary %d", n), nil
	}
	s, fb := summarize(ctx, call, msgs, 40000, "")
	if !fb || !strings.Contains(s, "part summary 1") || !strings.Contains(s, "part summary 2") || !strings.Contains(s, "left out") {
		t.Fatalf("summary %q (fallback %v), want the two parts done and the rest noted", s, fb)
	}
}
