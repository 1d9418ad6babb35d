package dispatch

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
)

// TestQueueAsFirstMessageIsSaved: /queue as a chat's very first message
// has no session to store the setting in yet; it creates one (issue 27:
// it answered "could not be saved" and logged nothing). The title is left
// to the first real message.
func TestQueueAsFirstMessageIsSaved(t *testing.T) {
	m := &model{reply: func(llm.Request) (string, error) { return "ok", nil }}
	h := newHarness(t, "", m)
	h.handle(in("tg", "51", "/queue steer cap:5"))
	h.drained()
	if got := h.tg.texts(); len(got) != 1 || !strings.HasPrefix(got[0], "Queue set: steer") || !strings.Contains(got[0], "cap 5") {
		t.Fatalf("/queue as the first message answered %q, want Queue set: steer (… cap 5 …)", got)
	}
	st, err := h.mgr.Backend().Store("main")
	if err != nil {
		t.Fatal(err)
	}
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "51"}
	e, ok, err := st.Get(key)
	if err != nil || !ok || e.QueueMode != "steer" || e.QueueCap != 5 || e.Title != "" {
		t.Fatalf("entry of %s = %+v, %v, %v; want queue steer, cap 5, no title", key, e, ok, err)
	}
	h.handle(in("tg", "51", "hello there"))
	h.drained()
	if e, _, _ = st.Get(key); e.Title != "hello there" || e.QueueMode != "steer" {
		t.Errorf("after the first message: title %q queue %q, want the message's title and steer kept", e.Title, e.QueueMode)
	}
}

// TestCompactWithNothingToCompact: /compact as the first message, and
// /compact of a session with a single exchange, say there is nothing to
// compact instead of "something went wrong".
func TestCompactWithNothingToCompact(t *testing.T) {
	m := &model{reply: func(llm.Request) (string, error) { return "ok", nil }}
	h := newHarness(t, "", m)
	h.handle(in("tg", "52", "/compact"))
	h.drained()
	h.handle(in("tg", "52", "hi"))
	h.drained()
	h.handle(in("tg", "52", "/compact"))
	h.drained()
	got := h.tg.texts()
	if len(got) != 3 || !strings.HasPrefix(got[0], "Nothing to compact") || !strings.HasPrefix(got[2], "Nothing to compact") {
		t.Fatalf("replies %q, want \"Nothing to compact…\" for both /compact", got)
	}
}

// TestStatusShowsContextShare: /status gives the context in use as a share
// of the model's window too, not only as a count.
func TestStatusShowsContextShare(t *testing.T) {
	m := &model{reply: func(llm.Request) (string, error) { return "ok", nil }}
	h := newHarness(t, "", m, func(h *harness) {
		h.agent = func(o *agents.Options) { o.Defaults.ContextWindow = 100000 }
	})
	h.handle(in("tg", "53", "hello"))
	h.drained()
	h.handle(in("tg", "53", "/status"))
	h.drained()
	got := h.tg.texts()
	if len(got) != 2 || !regexp.MustCompile(`context \d+ of 100000 \(\d+%\)`).MatchString(got[1]) {
		t.Fatalf("/status = %q, want the context as \"N of 100000 (P%%)\"", got)
	}
}
