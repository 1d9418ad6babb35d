package dispatch

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

func TestFollowupAnswersEachMessageOnce(t *testing.T) {
	h := newHarness(t, "", nil)
	a, b := in("tg", "1", "hello"), in("tg", "1", "again")
	h.handle(a)
	h.handle(b)
	h.drained()
	got := h.tg.sent()
	if len(got) != 2 || got[0].Text != "re: hello" || got[1].Text != "re: again" {
		t.Fatalf("sent %+v", got)
	}
	if got[0].Out.ReplyToID != a.MessageID || !slices.Equal(got[0].Out.Answers, []string{a.MessageID}) {
		t.Errorf("first reply target %+v", got[0].Out)
	}
	route, _ := h.d.Route(a)
	hist := h.history(route.Key.String())
	if countRole(hist, sessions.RoleAssistant) != 2 || countRole(hist, sessions.RoleUser) != 2 {
		t.Errorf("transcript roles %+v", hist)
	}
	if !slices.Equal(hist[0].RecordIDs, []string{RecordID(a)}) {
		t.Errorf("user entry record ids %v, want %v", hist[0].RecordIDs, RecordID(a))
	}
	// A redelivery of a handled message is a duplicate.
	if err := h.d.Handle(h.ctx, a); !errors.Is(err, channels.ErrRejected) {
		t.Errorf("redelivery: %v", err)
	}
}

func TestCollectMergesMessagesKeptApartIntoOneReply(t *testing.T) {
	m := &model{block: make(chan struct{})}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Collect, Debounce: 20 * time.Millisecond, Cap: 20, Drop: lanes.DropSummarize}))
	first := in("tg", "2", "start")
	h.handle(first)
	eventually(t, "the first turn", func() bool { return len(m.requests()) == 1 })
	msgs := []channels.Inbound{in("tg", "2", "hi"), in("tg", "2", "how are you"), in("tg", "2", "?")}
	for _, msg := range msgs {
		h.handle(msg)
	}
	close(m.block)
	h.drained()
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (one per batch)", len(reqs))
	}
	// Separate messages or one merged message, the model sees them apart.
	if got := strings.Join(lastUserTexts(reqs[1].Messages), "\n\n"); got != "hi\n\nhow are you\n\n?" {
		t.Errorf("merged inputs reached the model as %q", got)
	}
	got := h.tg.sent()
	if len(got) != 2 {
		t.Fatalf("sent %+v", got)
	}
	want := []string{msgs[0].MessageID, msgs[1].MessageID, msgs[2].MessageID}
	if !slices.Equal(got[1].Out.Answers, want) {
		t.Errorf("merged reply answers %v, want %v", got[1].Out.Answers, want)
	}
}

func TestMultiChunkReplyAndCommands(t *testing.T) {
	m := &model{reply: func(req llm.Request) (string, error) {
		return "one§two§three", nil
	}}
	h := newHarness(t, "", m)
	h.handle(in("tg", "3", "long please"))
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("chunks %q", got)
	}
	for i, s := range h.tg.sent() {
		if s.Index != i {
			t.Errorf("chunk %d sent as index %d", i, s.Index)
		}
	}
	h.handle(in("tg", "3", "/status"))
	h.handle(in("tg", "3", "/help"))
	h.handle(in("tg", "3", "/new fresh start"))
	h.drained()
	texts := h.tg.texts()[3:]
	if len(texts) != 5 || !strings.Contains(texts[0], "Session") || !strings.Contains(texts[1], "/history") ||
		texts[2] != "one" {
		t.Fatalf("command replies %q", texts)
	}
	if len(m.requests()) != 2 {
		t.Errorf("%d model calls, want 2 (the first message and /new's text)", len(m.requests()))
	}
}

func TestModelFailureTellsTheSenderOnce(t *testing.T) {
	m := &model{reply: func(llm.Request) (string, error) { return "", errBoom }}
	h := newHarness(t, "", m)
	h.handle(in("tg", "4", "hello"))
	h.drained()
	got := h.tg.sent()
	if len(got) != 1 || !got[0].Out.Failed || !strings.Contains(got[0].Text, "could not answer") {
		t.Fatalf("sent %+v", got)
	}
	h.restart()
	if n, err := h.d.Resume(h.ctx); err != nil || n != 0 {
		t.Fatalf("resume after a told failure: %d, %v", n, err)
	}
}

func TestSendFailureRetriedThenGivenUp(t *testing.T) {
	defer func(r []time.Duration) { sendRetries = r }(sendRetries)
	sendRetries = []time.Duration{time.Millisecond, time.Millisecond}
	m := &model{reply: func(llm.Request) (string, error) { return "a§b", nil }}
	h := newHarness(t, "", m)
	tries := 0
	h.tg.failSend = func(out channels.Outbound, i int) error {
		if i == 1 {
			tries++
			return errBoom
		}
		return nil
	}
	h.handle(in("tg", "5", "hello"))
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"a"}) || tries != 3 {
		t.Fatalf("sent %q after %d tries of chunk 2", got, tries)
	}
	if v := testutil.ToFloat64(h.d.opts.Metrics.GivenUp.WithLabelValues("send")); v != 1 {
		t.Errorf("given-up metric %v", v)
	}
	// errBoom says nothing of what the platform did: both retries may
	// have shown the chunk twice. A refusal retried cannot.
	uncertain := func() float64 { return testutil.ToFloat64(h.d.opts.Metrics.Uncertain.WithLabelValues("tg", "retry")) }
	if v := uncertain(); v != 2 {
		t.Errorf("gateway_outbound_uncertain_total{cause=retry} = %v after two retries of an unknown outcome, want 2", v)
	}
	h.tg.failSend = func(out channels.Outbound, i int) error {
		if i == 1 {
			return channels.Refusal(errBoom)
		}
		return nil
	}
	h.handle(in("tg", "5", "again"))
	h.drained()
	if v := uncertain(); v != 2 {
		t.Errorf("after retries of refusals {cause=retry} = %v, want still 2", v)
	}
}

func TestInfrastructureFailureRetriedThenGivenUpWithNotice(t *testing.T) {
	defer func(b []time.Duration) { failureBackoff = b }(failureBackoff)
	failureBackoff = []time.Duration{time.Millisecond, time.Millisecond}
	h := newHarness(t, "", nil)
	// A turn that failed for a reason other than the model (the store or
	// the transcript) runs again after a backoff.
	msg := in("tg", "6", "hello")
	w := acceptOnly(t, h, msg)
	h.d.fails.failed(h.ctx, []*work{w}, h.d.log, errBoom)
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: hello"}) {
		t.Fatalf("retried turn sent %q", got)
	}
	// At MaxFailures it is given up, with a notice to its chat.
	h.d.opts.MaxFailures = 2
	msg = in("tg", "6", "second")
	w = acceptOnly(t, h, msg)
	w.Failures = 1
	h.d.fails.failed(h.ctx, []*work{w}, h.d.log, errBoom)
	h.drained()
	got := h.tg.sent()
	if len(got) != 2 || !strings.HasPrefix(got[1].Text, "Sorry — I could not answer your message from ") ||
		!strings.Contains(got[1].Text, `"second"`) || !got[1].Out.Failed {
		t.Fatalf("notice %+v", got)
	}
	if v := testutil.ToFloat64(h.d.opts.Metrics.GivenUp.WithLabelValues("failures")); v != 1 {
		t.Errorf("given-up metric %v", v)
	}
	if len(h.m.requests()) != 1 {
		t.Errorf("%d model calls, want 1", len(h.m.requests()))
	}
}
