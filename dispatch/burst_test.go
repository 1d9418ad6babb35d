package dispatch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// burstCfg is messages.inbound for the fake "tg" channel.
func burstCfg(debounce, paste time.Duration) InboundConfig {
	c := DefaultInbound()
	c.ByChannel = map[string]InboundChannel{"tg": {Debounce: debounce, PasteWindow: paste}}
	return c
}

// setInbound swaps the harness dispatcher's messages.inbound (call again
// after a restart).
func setInbound(h *harness, c InboundConfig) {
	rt := *h.d.Runtime()
	rt.Inbound = c
	h.d.SetRuntime(&rt)
}

// groupMsg is a mentioned group message from sender in chat.
func groupMsg(chat, sender, text string) channels.Inbound {
	m := in("tg", chat, text)
	m.ChatType, m.SenderID, m.SenderName = channels.Group, sender, "u"+sender
	return m
}

// userEntries are the user messages of key's transcript.
func userEntries(h *harness, key string) []sessions.Message {
	var out []sessions.Message
	for _, m := range h.history(key) {
		if m.Role == sessions.RoleUser {
			out = append(out, m)
		}
	}
	return out
}

// TestBurstJoinsQuickMessagesIntoOneTurn: "hi", "how are you", "?" 100 ms
// apart (window 300 ms) are one turn whose input keeps them on three
// lines; the reply answers all three; the transcript holds one user entry
// carrying the three record ids.
func TestBurstJoinsQuickMessagesIntoOneTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		setInbound(h, burstCfg(300*time.Millisecond, 0))
		msgs := []channels.Inbound{in("tg", "31", "hi"), in("tg", "31", "how are you"), in("tg", "31", "?")}
		for i, m := range msgs {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			h.handle(m)
		}
		time.Sleep(300 * time.Millisecond)
		h.drained()
		reqs := h.m.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model calls, want 1", len(reqs))
		}
		if got := lastUserTexts(reqs[0].Messages); !slices.Equal(got, []string{"hi\nhow are you\n?"}) {
			t.Errorf("model input %q, want one message of three lines", got)
		}
		sent := h.tg.sent()
		if len(sent) != 1 || sent[0].Text != "re: hi\nhow are you\n?" {
			t.Fatalf("sent %+v", sent)
		}
		ids := []string{msgs[0].MessageID, msgs[1].MessageID, msgs[2].MessageID}
		if !slices.Equal(sent[0].Out.Answers, ids) || sent[0].Out.ReplyToID != msgs[2].MessageID {
			t.Errorf("reply answers %v (reply to %s), want %v", sent[0].Out.Answers, sent[0].Out.ReplyToID, ids)
		}
		route, _ := h.d.Route(msgs[0])
		users := userEntries(h, route.Key.String())
		want := []string{RecordID(msgs[0]), RecordID(msgs[1]), RecordID(msgs[2])}
		if len(users) != 1 || !slices.Equal(users[0].RecordIDs, want) {
			t.Errorf("user entries %+v, want one with record ids %v", users, want)
		}
	})
}

// TestBurstSingleMessageWaitsOnlyTheWindow: a message from a sender who is
// not mid-burst starts its turn when the window has passed, not later; a
// channel without assembly adds no wait at all.
func TestBurstSingleMessageWaitsOnlyTheWindow(t *testing.T) {
	for _, window := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(window.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &model{started: make(chan struct{}, 1)}
				h := newHarness(t, "", m)
				setInbound(h, burstCfg(window, 0))
				start := time.Now()
				h.handle(in("tg", "32", "alone"))
				if window > 0 {
					time.Sleep(window - time.Millisecond)
					synctest.Wait()
					if n := len(m.requests()); n != 0 {
						t.Fatalf("the turn started %d times before the window passed", n)
					}
				}
				<-m.started
				if waited := time.Since(start); waited != window {
					t.Errorf("turn started after %s, want exactly the window %s", waited, window)
				}
				h.drained()
			})
		})
	}
}

// TestBurstNeverMergesAcrossSenders: two senders interleaving in one group
// get one turn each, their own lines only.
func TestBurstNeverMergesAcrossSenders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		setInbound(h, burstCfg(300*time.Millisecond, 0))
		for _, m := range []channels.Inbound{groupMsg("-33", "1", "a1"), groupMsg("-33", "2", "b1"),
			groupMsg("-33", "1", "a2"), groupMsg("-33", "2", "b2")} {
			h.handle(m)
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second)
		h.drained()
		var got []string
		for _, r := range h.m.requests() {
			got = append(got, strings.Join(lastUserTexts(r.Messages), "|"))
		}
		want := []string{"[u1] a1\na2", "[u2] b1\nb2"}
		if !slices.Equal(got, want) {
			t.Errorf("model inputs %q, want %q", got, want)
		}
		if n := len(h.tg.sent()); n != 2 {
			t.Errorf("%d replies, want 2", n)
		}
	})
}

// TestBurstCommandIsNeverMerged: a command in the middle of a burst flushes
// what its sender said before it (answered first), runs on its own, and
// what follows is a new burst.
func TestBurstCommandIsNeverMerged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		setInbound(h, burstCfg(300*time.Millisecond, 0))
		h.handle(in("tg", "34", "one"))
		h.handle(in("tg", "34", "two"))
		h.handle(in("tg", "34", "/status"))
		h.handle(in("tg", "34", "three"))
		time.Sleep(time.Second)
		h.drained()
		var got []string
		for _, r := range h.m.requests() {
			got = append(got, strings.Join(lastUserTexts(r.Messages), "|"))
		}
		if !slices.Equal(got, []string{"one\ntwo", "three"}) {
			t.Errorf("model inputs %q, want [one\\ntwo three]", got)
		}
		sent := h.tg.texts()
		if len(sent) != 3 || sent[0] != "re: one\ntwo" || !strings.Contains(sent[1], "agent:main:tg:direct:34") || sent[2] != "re: three" {
			t.Errorf("sent %q: want the burst's reply, the /status answer, then the next reply", sent)
		}
	})
}

// TestBurstRejoinsSplitPaste: a 9,000-character paste that the client cut
// into 4096 + 4096 + 808 characters, the fragments 600 ms apart (past the
// 300 ms debounce, within the 1.5 s paste window), is one input holding the
// paste exactly once, with nothing invented at the cuts; a short message
// after the last fragment is a separate line of the same input.
func TestBurstRejoinsSplitPaste(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		setInbound(h, burstCfg(300*time.Millisecond, 1500*time.Millisecond))
		paste := pasteText(9000)
		for i, part := range []string{paste[:4096], paste[4096:8192], paste[8192:]} {
			if i > 0 {
				time.Sleep(600 * time.Millisecond)
			}
			h.handle(in("tg", "35", part))
		}
		time.Sleep(100 * time.Millisecond)
		h.handle(in("tg", "35", "thoughts?"))
		time.Sleep(time.Second)
		h.drained()
		reqs := h.m.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model calls, want 1", len(reqs))
		}
		got := lastUserTexts(reqs[0].Messages)
		if len(got) != 1 || got[0] != paste+"\nthoughts?" {
			t.Fatalf("model input is not the paste rejoined plus the question (len %d)", len(strings.Join(got, "")))
		}
		if n := len(h.tg.sent()); n != 1 {
			t.Errorf("%d replies, want 1", n)
		}
	})
}

// TestBurstRejoinsSplitPasteOfEmoji: Telegram clients cut a paste at 4096
// UTF-16 units, two for an emoji: a fragment full of emoji (3413
// characters) is a fragment all the same, and the next one, 600 ms later,
// joins it without a line break.
func TestBurstRejoinsSplitPasteOfEmoji(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		setInbound(h, burstCfg(300*time.Millisecond, 1500*time.Millisecond))
		first := strings.Repeat("ok 👍 ", 682) // 4092 units
		h.handle(in("tg", "37", first))
		time.Sleep(600 * time.Millisecond)
		h.handle(in("tg", "37", "the end"))
		time.Sleep(2 * time.Second)
		h.drained()
		reqs := h.m.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model calls, want 1", len(reqs))
		}
		if got := lastUserTexts(reqs[0].Messages); len(got) != 1 || got[0] != first+"the end" {
			t.Fatalf("model input is not the paste rejoined (%d parts)", len(got))
		}
	})
}

// pasteText is n characters of numbered tokens, so a lost, doubled or
// reordered cut shows.
func pasteText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "tok%05d; ", i)
	}
	return b.String()[:n]
}

// TestBurstCaps: reaching maxParts flushes at once (no wait for the
// window); a part that would pass maxChars starts a new input.
func TestBurstCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &model{started: make(chan struct{}, 10)}
		h := newHarness(t, "", m)
		c := burstCfg(10*time.Second, 0)
		c.MaxParts, c.MaxChars = 3, 12
		setInbound(h, c)
		start := time.Now()
		for _, text := range []string{"a", "b", "c"} {
			h.handle(in("tg", "36", text))
		}
		<-m.started
		if waited := time.Since(start); waited != 0 {
			t.Errorf("a full burst waited %s", waited)
		}
		h.drained()
		h.handle(in("tg", "36", "12345"))
		h.handle(in("tg", "36", "67890"))
		h.handle(in("tg", "36", "abcde")) // 15 characters: a new input
		for range 2 {
			<-m.started
		}
		h.drained()
		var got []string
		for _, r := range h.m.requests() {
			got = append(got, strings.Join(lastUserTexts(r.Messages), "|"))
		}
		if want := []string{"a\nb\nc", "12345\n67890", "abcde"}; !slices.Equal(got, want) {
			t.Errorf("model inputs %q, want %q", got, want)
		}
	})
}

// TestBurstHeldWhenTurnedOffGoesFirst: a burst held when a reload turns
// assembly off on its channel is not left to its window: the sender's next
// message queues it first, then itself, as two turns in order, and the
// window passing afterwards does not run it again.
func TestBurstHeldWhenTurnedOffGoesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		setInbound(h, burstCfg(time.Hour, 0))
		h.handle(in("tg", "33", "held"))
		synctest.Wait()
		if n := len(h.m.requests()); n != 0 {
			t.Fatalf("%d model calls while the burst is held, want 0", n)
		}
		setInbound(h, burstCfg(0, 0))
		h.handle(in("tg", "33", "after"))
		h.drained()
		time.Sleep(time.Hour)
		h.drained()
		var got []string
		for _, r := range h.m.requests() {
			got = append(got, lastUserTexts(r.Messages)...)
		}
		if !slices.Equal(got, []string{"held", "after"}) {
			t.Errorf("model inputs %q, want [held after]", got)
		}
	})
}
