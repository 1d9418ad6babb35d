package dispatch

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// acceptBurst journals msgs as Handle does and links them as the parts of
// one burst, as the holder would have, without queueing them.
func acceptBurst(t *testing.T, h *harness, msgs []channels.Inbound) []*work {
	t.Helper()
	var ws []*work
	for i, m := range msgs {
		w := acceptOnly(t, h, m)
		if i > 0 {
			w.Prev, w.Glue = ws[i-1].RecordID, "\n"
		}
		ws = append(ws, w)
	}
	return ws
}

// appendBurstTurn writes the joined user entry of ws (and a reply, if
// any) to their session's transcript, as a turn that died would have.
func appendBurstTurn(t *testing.T, h *harness, ws []*work, reply string) {
	t.Helper()
	st, err := h.mgr.Store(ws[0].AgentID)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Begin(h.ctx, ws[0].Key, sessions.Origin{At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []sessions.Message
	for _, w := range ws {
		msgs = h.d.appendUser(context.Background(), msgs, w, mediaTurn{})
	}
	if len(msgs) != 1 {
		t.Fatalf("the burst's parts made %d user entries, want 1", len(msgs))
	}
	if reply != "" {
		msgs = append(msgs, sessions.Message{Role: sessions.RoleAssistant, StopReason: "stop",
			Content: []sessions.Content{{Type: sessions.BlockText, Text: reply}}})
	}
	if _, err := tr.Append(h.ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestBurstCrashReplayLosesNothingAnswersNothingTwice leaves each state a
// crash can leave a burst in, restarts (queue mode followup, where every
// lane item is its own turn), and checks that every part is answered by
// exactly one reply, the model runs only when no reply was written, and
// the transcript holds one reply for the joined input.
func TestBurstCrashReplayLosesNothingAnswersNothingTwice(t *testing.T) {
	cases := []struct {
		name      string
		setup     func(t *testing.T, h *harness, ws []*work)
		held      bool     // the parts were held by the holder when the process stopped
		want      []string // delivered after the restart
		modelRuns int
		users     int  // user entries in the transcript at the end
		resumed   int  // records queued again (a stored reply resumes instead)
		off       bool // assembly is turned off for the restart
	}{
		{"held, never run", nil, true, []string{"re: p1\np2\np3"}, 1, 1, 3, false},
		{"journaled, never run", func(*testing.T, *harness, []*work) {}, false, []string{"re: p1\np2\np3"}, 1, 1, 3, false},
		{"joined entry appended, no reply", func(t *testing.T, h *harness, ws []*work) {
			appendBurstTurn(t, h, ws, "")
		}, false, []string{"re: p1\np2\np3"}, 1, 1, 3, false},
		{"joined entry answered, reply never stored", func(t *testing.T, h *harness, ws []*work) {
			appendBurstTurn(t, h, ws, "stored answer")
		}, false, []string{"stored answer"}, 0, 1, 3, false},
		{"joined reply stored, one chunk of two sent", func(t *testing.T, h *harness, ws []*work) {
			appendBurstTurn(t, h, ws, "first§second")
			out := outboundFor(ws[2].In)
			out.Answers = answers(ws)
			target, _ := json.Marshal(out)
			rp := sessions.Reply{ID: "r-burst", Records: recordIDs(ws), AgentID: ws[0].AgentID,
				SessionKey: ws[0].Key.String(), Target: target, Chunks: []string{"first", "second"}}
			if err := h.journal().Ready(rp); err != nil {
				t.Fatal(err)
			}
			if err := h.journal().Sent(rp.ID, 1); err != nil {
				t.Fatal(err)
			}
		}, false, []string{"second"}, 0, 1, 0, false},
		{"joined entry appended, a later part pending", func(t *testing.T, h *harness, ws []*work) {
			appendBurstTurn(t, h, ws[:2], "")
		}, false, []string{"re: p1\np2\n\np3"}, 1, 2, 3, false}, // consecutive user entries reach the model merged
		{"joined entry appended, assembly turned off before the restart", func(t *testing.T, h *harness, ws []*work) {
			if err := h.journal().Start(recordIDs(ws)...); err != nil {
				t.Fatal(err)
			}
			appendBurstTurn(t, h, ws, "")
		}, false, []string{"re: p1\np2\np3"}, 1, 1, 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, "", nil)
				setInbound(h, burstCfg(time.Second, 0))
				msgs := []channels.Inbound{in("tg", "40", "p1"), in("tg", "40", "p2"), in("tg", "40", "p3")}
				if tc.held {
					for _, m := range msgs {
						h.handle(m)
					}
				} else {
					tc.setup(t, h, acceptBurst(t, h, msgs))
				}
				h.restart()
				if tc.off {
					setInbound(h, InboundConfig{})
				} else {
					setInbound(h, burstCfg(time.Second, 0))
				}
				if n, err := h.d.Resume(h.ctx); err != nil || n != tc.resumed {
					t.Fatalf("resumed %d (%v), want %d", n, err, tc.resumed)
				}
				h.drained()
				if got := h.tg.texts(); !slices.Equal(got, tc.want) {
					t.Errorf("delivered %q, want %q", got, tc.want)
				}
				if n := len(h.m.requests()); n != tc.modelRuns {
					t.Errorf("%d model calls, want %d", n, tc.modelRuns)
				}
				ids := []string{msgs[0].MessageID, msgs[1].MessageID, msgs[2].MessageID}
				for _, s := range h.tg.sent() {
					if !slices.Equal(s.Out.Answers, ids) {
						t.Errorf("reply answers %v, want all parts %v", s.Out.Answers, ids)
					}
				}
				route, _ := h.d.Route(msgs[0])
				hist := h.history(route.Key.String())
				if u, a := countRole(hist, sessions.RoleUser), countRole(hist, sessions.RoleAssistant); u != tc.users || a != 1 {
					t.Errorf("transcript has %d user and %d assistant messages, want %d and 1", u, a, tc.users)
				}
				h.restart()
				if n, err := h.d.Resume(h.ctx); err != nil || n != 0 || h.journal().Stats().Replies != 0 {
					t.Fatalf("second restart resumed %d (%v), %d replies", n, err, h.journal().Stats().Replies)
				}
			})
		})
	}
}

// TestBurstFailedTurnRunsAgainAsOne: a joined turn that failed after its
// entry was appended runs again as one item (in followup mode, parts queued
// one by one would each find the first one's reply and get it again).
func TestBurstFailedTurnRunsAgainAsOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		msgs := []channels.Inbound{in("tg", "41", "p1"), in("tg", "41", "p2"), in("tg", "41", "p3")}
		ws := acceptBurst(t, h, msgs)
		appendBurstTurn(t, h, ws, "")
		h.d.fails.failed(h.ctx, ws, h.d.log, errBoom)
		time.Sleep(failureBackoff[0])
		h.drained()
		if got := h.tg.texts(); !slices.Equal(got, []string{"re: p1\np2\np3"}) {
			t.Errorf("delivered %q, want one reply", got)
		}
		if n := len(h.m.requests()); n != 1 {
			t.Errorf("%d model calls, want 1", n)
		}
	})
}

// TestBurstStopDropsHeldParts: /stop finishes a held burst of its session
// instead of letting it run after the stop.
func TestBurstStopDropsHeldParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "", nil)
		setInbound(h, burstCfg(time.Second, 0))
		h.handle(in("tg", "42", "never mind"))
		h.handle(in("tg", "42", "/stop"))
		time.Sleep(2 * time.Second)
		h.drained()
		if got := h.tg.texts(); !slices.Equal(got, []string{"Stopped. 1 queued message(s) dropped."}) {
			t.Errorf("delivered %q", got)
		}
		if n := len(h.m.requests()); n != 0 {
			t.Errorf("%d model calls after /stop, want 0", n)
		}
	})
}
