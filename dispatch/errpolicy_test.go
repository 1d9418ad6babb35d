package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
)

// withRoom makes every room of the harness behave as room.
func withRoom(h *harness, room channels.Room) {
	rt := *h.d.Runtime()
	rt.Room = func(channels.Inbound) channels.Room { return room }
	h.d.SetRuntime(&rt)
}

// flakyModel fails every request whose newest input line contains "fail".
func flakyModel() *model {
	return &model{reply: func(req llm.Request) (string, error) {
		texts := lastUserTexts(req.Messages) // failed turns' inputs come merged before the newest
		newest := texts[len(texts)-1]
		if strings.Contains(newest[strings.LastIndex(newest, "\n")+1:], "fail") {
			return "", errBoom
		}
		return "re: " + strings.Join(texts, " + "), nil
	}}
}

// notices are the failure notices delivered, in order.
func notices(h *harness) []string {
	var out []string
	for _, s := range h.tg.sent() {
		if s.Out.Failed {
			out = append(out, s.Text)
		}
	}
	return out
}

// TestErrorPolicy: always posts a notice per failed turn; once posts one
// per failure streak of a room (a success ends it; other rooms have their
// own); silent posts none. Every failed message is finished either way.
func TestErrorPolicy(t *testing.T) {
	cases := []struct {
		policy string
		want   int // notices for: fail, fail, ok, fail, other room's fail
	}{
		{channels.ErrorsAlways, 4},
		{channels.ErrorsOnce, 3},
		{channels.ErrorsSilent, 0},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			h := newHarness(t, "", flakyModel())
			room := channels.DefaultRoom("tg")
			room.ErrorPolicy = tc.policy
			withRoom(h, room)
			for _, text := range []string{"fail 1", "fail 2", "works", "fail 3"} {
				h.handle(groupMsg("-50", "7", text))
				h.drained()
			}
			h.handle(groupMsg("-51", "7", "fail elsewhere"))
			h.drained()
			got := notices(h)
			if len(got) != tc.want {
				t.Errorf("%d notices %q, want %d", len(got), got, tc.want)
			}
			if answers := len(h.tg.sent()) - len(got); answers != 1 {
				t.Errorf("%d answers, want 1", answers)
			}
			if tc.policy == channels.ErrorsOnce && len(got) == 3 {
				sent := h.tg.sent()
				if !sent[0].Out.Failed || sent[1].Out.Failed || !sent[2].Out.Failed || sent[3].Out.ChatID != "-51" {
					t.Errorf("once: notices at the wrong turns: %+v", sent)
				}
			}
			h.restart()
			if n, err := h.d.Resume(h.ctx); err != nil || n != 0 {
				t.Errorf("a failed message is still pending after a restart: %d (%v)", n, err)
			}
		})
	}
}

// TestGivenUpNoticeUnderErrorPolicy: a message given up is announced
// under always and once (SPEC §3.7); silent logs it instead.
func TestGivenUpNoticeUnderErrorPolicy(t *testing.T) {
	defer func(b []time.Duration) { failureBackoff = b }(failureBackoff)
	failureBackoff = []time.Duration{time.Millisecond}
	for policy, want := range map[string]int{channels.ErrorsOnce: 1, channels.ErrorsSilent: 0} {
		t.Run(policy, func(t *testing.T) {
			h := newHarness(t, "", nil)
			room := channels.DefaultRoom("tg")
			room.ErrorPolicy = policy
			withRoom(h, room)
			h.d.opts.MaxFailures = 1
			w := acceptOnly(t, h, groupMsg("-52", "7", "doomed"))
			h.d.fails.failed(h.ctx, []*work{w}, h.d.log, errBoom)
			h.drained()
			got := notices(h)
			if len(got) != want || (want == 1 && !strings.HasPrefix(got[0], "Sorry — I could not answer your message")) {
				t.Errorf("notices %q, want %d given-up notice(s)", got, want)
			}
		})
	}
}
