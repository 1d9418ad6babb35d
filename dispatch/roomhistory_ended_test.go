package dispatch

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/routing"
)

// endRig is a Telegram group room with one session begun (a mention and
// its reply), on a gateway clock the test moves (later).
type endRig struct {
	r      *roomRig
	tg     *telegramtest.Server
	model  *openaitest.Server
	ctx    context.Context
	bot    string
	sent   int // replies sent so far
	offset atomic.Int64
}

func newEndRig(t *testing.T) *endRig {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	x := &endRig{tg: tg, model: model, ctx: rigCtx(t), bot: "@" + tg.BotUserName() + " "}
	x.r = newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		now: x.now})
	x.mention("hi", 0)
	return x
}

// now is the gateway's clock.
func (x *endRig) now() time.Time { return time.Now().Add(time.Duration(x.offset.Load())) }

// later moves the gateway's clock d on.
func (x *endRig) later(d time.Duration) { x.offset.Add(int64(d)) }

// dated posts a group message sent shift from the gateway's now and waits
// until it is kept (or handled).
func (x *endRig) dated(from int64, name, text string, shift time.Duration) {
	x.r.t.Helper()
	u, _ := x.tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: from, FromName: name, Text: text,
		Extra: map[string]any{"date": x.now().Add(shift).Unix()}})
	if err := x.tg.WaitConfirmed(x.ctx, u); err != nil {
		x.r.t.Fatal(err)
	}
}

// mention addresses the bot as Alice and returns the model's request.
func (x *endRig) mention(text string, shift time.Duration) openaitest.Request {
	x.r.t.Helper()
	n := len(x.model.Requests())
	x.dated(alice, "Alice", x.bot+text, shift)
	req := waitModel(x.r.t, x.model, n+1)
	x.sent++
	if _, err := x.tg.WaitSent(x.ctx, x.sent); err != nil {
		x.r.t.Fatal(err)
	}
	x.r.drained()
	return req
}

// command sends a chat command as Alice and waits for its answer.
func (x *endRig) command(text string) string {
	x.r.t.Helper()
	x.dated(alice, "Alice", text, 0)
	x.sent++
	sent, err := x.tg.WaitSent(x.ctx, x.sent)
	if err != nil {
		x.r.t.Fatal(err)
	}
	x.r.drained()
	return sent[len(sent)-1].Text
}

// TestRoomHistoryOfEndedSessionNeverReachesTheNext: what the group said
// while a session was current, after its last reply, belonged to it: once
// the session is deleted (from the chat, through the API or the CLI) or
// switched away from, the next session's first turn does not get it. What
// was said after the end does reach it.
func TestRoomHistoryOfEndedSessionNeverReachesTheNext(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(x *endRig)
	}{
		{"chat /delete", func(x *endRig) {
			if got := x.command("/delete"); !strings.Contains(got, "Deleted the current session") {
				t.Fatalf("/delete answered %q", got)
			}
		}},
		{"store Delete (API, CLI)", func(x *endRig) {
			key, _ := routing.Parse(tgKey)
			st, _ := x.r.mgr.Store("main")
			if err := st.Delete(x.ctx, key); err != nil {
				t.Fatal(err)
			}
		}},
		{"chat /switch", func(x *endRig) {
			if got := x.command("/new"); !strings.Contains(got, "Started a new session") {
				t.Fatalf("/new answered %q", got)
			}
			x.mention("second session", time.Second)
			x.later(time.Hour)
			x.dated(bob, "Bob", "said before the end", -30*time.Minute)
			if got := x.command("/switch 1"); !strings.Contains(got, "Switched to session") {
				t.Fatalf("/switch answered %q", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newEndRig(t)
			// Said half an hour into the session, which ends an hour in.
			x.later(time.Hour)
			x.dated(bob, "Bob", "said before the end", -30*time.Minute)
			tc.end(x)
			x.dated(bob, "Bob", "said after the end", 2*time.Second)
			got := lastUser(x.mention("so?", 3*time.Second))
			if strings.Contains(got, "before the end") {
				t.Errorf("a message kept for the ended session reached the next one:\n%s", got)
			}
			if !inOrder(got, historyHeader, "Bob: said after the end\n", historyFooter, "[Alice] so?") {
				t.Errorf("what was said after the end is not in the next turn:\n%s", got)
			}
		})
	}
}

// TestRoomHistoryAfterPruneIsKept: a session maintenance pruned (no one
// addressed the bot for pruneAfter) did not end by anyone's wish: its room
// is as new, and the next mention sees what the group said meanwhile, as a
// room's first mention does.
func TestRoomHistoryAfterPruneIsKept(t *testing.T) {
	x := newEndRig(t)
	x.later(31 * 24 * time.Hour)
	x.dated(bob, "Bob", "said while no one asked the bot", -time.Hour)
	rep, err := x.r.mgr.Maintain(x.ctx)
	if err != nil || len(rep) != 1 || len(rep[0].Pruned) != 1 {
		t.Fatalf("maintenance: %+v, %v; want the session pruned", rep, err)
	}
	got := lastUser(x.mention("so?", time.Second))
	if !inOrder(got, historyHeader, "Bob: said while no one asked the bot\n", historyFooter, "[Alice] so?") {
		t.Errorf("after a prune the next mention got:\n%s", got)
	}
	if u := x.r.transcriptUsers(tgKey); len(u) != 1 {
		t.Errorf("the session after the prune holds %d user messages, want 1 (a new session)", len(u))
	}
}

// TestRoomHistoryKeptWhenACommandStartsTheFirstSession: a room's first
// session begun by a setting command (/queue, /model, /think, /activation
// before anyone mentioned the bot) has ended nothing: the first mention
// still sees what the group said before the command, as a room's first
// mention does.
func TestRoomHistoryKeptWhenACommandStartsTheFirstSession(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	x := &endRig{tg: tg, model: model, ctx: rigCtx(t), bot: "@" + tg.BotUserName() + " "}
	x.r = newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		now: x.now})
	x.dated(bob, "Bob", "said before anyone asked the bot", -10*time.Minute)
	if got := x.command("/queue followup"); !strings.HasPrefix(got, "Queue set") {
		t.Fatalf("/queue answered %q", got)
	}
	got := lastUser(x.mention("so?", time.Second))
	if !inOrder(got, historyHeader, "Bob: said before anyone asked the bot\n", historyFooter, "[Alice] so?") {
		t.Errorf("the first mention after a setting command got:\n%s", got)
	}
}
