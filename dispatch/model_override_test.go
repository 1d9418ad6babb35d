package dispatch

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// dmKey is the session key of Telegram user 111's DM.
const dmKey = "agent:main:telegram:direct:111"

// dmAsker sends DMs from user 111 and returns the bot's answer to each.
type dmAsker struct {
	t  *testing.T
	tg *telegramtest.Server
	n  int
}

func (a *dmAsker) ask(text string) string {
	a.t.Helper()
	a.tg.DM(111, text)
	a.n++
	return waitReply(a.t, a.tg, a.n)
}

// patchEntry changes key's entry as another writer would (the API, an
// older daemon, an import).
func (r *roomRig) patchEntry(key string, fn func(*sessions.Entry)) {
	r.t.Helper()
	k, err := routing.Parse(key)
	if err != nil {
		r.t.Fatal(err)
	}
	st, err := r.mgr.Store(k.Agent)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := st.Patch(context.Background(), k, func(e *sessions.Entry) error { fn(e); return nil }); err != nil {
		r.t.Fatal(err)
	}
}

// TestModelOverrideLifecycle: /model big is kept by /new and /reset (a
// manual reset keeps the overrides, SPEC §3.6, as OpenClaw's reset
// does), by a restart and by a config reload; the next request after
// each goes to big. /model x of a model the operator did not configure is
// refused with the choices and changes nothing.
func TestModelOverrideLifecycle(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram"), agents: twoModels()})
	a := &dmAsker{t: t, tg: tg}
	reqs := 0
	lastModel := func() string {
		t.Helper()
		reqs++
		return waitModel(t, model, reqs).Body.Model
	}

	if got := a.ask("/model big"); !strings.Contains(got, "Model: fake/big") {
		t.Fatalf("/model big answered %q", got)
	}
	for _, tc := range []struct{ cmd, want string }{
		{"/model fake/huge", `Unknown model "fake/huge"`},
		{"/model other/big", `Unknown model "other/big"`},
		{"/model gpt", `Unknown model "gpt"`},
	} {
		if got := a.ask(tc.cmd); !strings.Contains(got, tc.want) || !strings.Contains(got, "fake/big") {
			t.Errorf("%s answered %q; want %q and the choices", tc.cmd, got, tc.want)
		}
		if e := r.entry(dmKey); e.ModelOverride != "fake/big" {
			t.Errorf("after %s the override is %q, want fake/big unchanged", tc.cmd, e.ModelOverride)
		}
	}
	a.ask("hello")
	if got := lastModel(); got != "big" {
		t.Errorf("request after /model big went to %q, want big", got)
	}
	for _, cmd := range []string{"/new", "/reset"} {
		before := r.entry(dmKey).SessionID
		if got := a.ask(cmd); !strings.Contains(got, "Started a new session") {
			t.Fatalf("%s answered %q", cmd, got)
		}
		e := r.entry(dmKey)
		if e.SessionID == before || e.ModelOverride != "fake/big" {
			t.Errorf("after %s: new session %v, override %q; want a new session on fake/big", cmd, e.SessionID != before, e.ModelOverride)
		}
		a.ask("still big?")
		if got := lastModel(); got != "big" {
			t.Errorf("request after %s went to %q, want big", cmd, got)
		}
	}

	r.stop()
	r.start()
	a.ask("after a restart")
	if got := lastModel(); got != "big" {
		t.Errorf("request after a restart went to %q, want big", got)
	}

	rt := *r.d.Runtime()
	rt.Queue.Cap = 7 // any change: a reload builds a new Runtime
	r.d.SetRuntime(&rt)
	a.ask("after a reload")
	if got := lastModel(); got != "big" {
		t.Errorf("request after a config reload went to %q, want big", got)
	}
	if got := a.ask("/model"); !strings.Contains(got, "Model: fake/big\n") || !strings.Contains(got, "fake/big (current)") {
		t.Errorf("/model answered %q; want fake/big as the current model", got)
	}
}

// TestNewWithModelKeepsToTheChoices: /new provider/model sets only a
// model /model would (the operator's choices, any case, written as
// configured); a model of a configured provider the operator did not list
// is refused with the choices and changes nothing: no reset, no override,
// no message sent to the model.
func TestNewWithModelKeepsToTheChoices(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram"), agents: twoModels()})
	a := &dmAsker{t: t, tg: tg}

	a.ask("hello")
	first := r.entry(dmKey).SessionID
	got := a.ask("/new fake/huge tell me a story")
	if !strings.Contains(got, `Unknown model "fake/huge"`) || !strings.Contains(got, "fake/big") {
		t.Errorf("/new fake/huge answered %q; want the refusal with the choices", got)
	}
	e := r.entry(dmKey)
	if e.SessionID != first || e.ModelOverride != "" {
		t.Errorf("after a refused /new: session changed %v, override %q; want nothing changed", e.SessionID != first, e.ModelOverride)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the refused /new's text reached the model", n)
	}

	a.ask("/new FAKE/BIG tell me a story")
	if req := waitModel(t, model, 2); req.Body.Model != "big" || req.LastUserText() != "tell me a story" {
		t.Errorf("/new FAKE/BIG sent %q to model %q; want the rest to big", req.LastUserText(), req.Body.Model)
	}
	if e := r.entry(dmKey); e.SessionID == first || e.ModelOverride != "fake/big" {
		t.Errorf("after /new FAKE/BIG: new session %v, override %q; want a new session on fake/big", e.SessionID != first, e.ModelOverride)
	}
}

// TestGroupModelCommandsAddressedToTheBot: in a Telegram group that
// admits everyone, where only the operator's owners may change the
// shared session, "/model@bot big" from an owner switches it and
// "/new@bot" starts a new session keeping it; a member's "/model@bot",
// "/model@bot m" and "/new@bot" are refused and change nothing, while
// "/status@bot" (not privileged) answers them; a command for another bot
// is not answered at all.
func TestGroupModelCommandsAddressedToTheBot(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, room: channels.DefaultRoom("telegram"), agents: twoModels(),
		access: map[access.Account]access.Config{{Channel: "telegram", AccountID: "default"}: {GroupPolicy: access.GroupOpen}},
		owners: []string{"telegram:111"}})
	ctx := rigCtx(t)
	bot := "@" + tg.BotUserName()
	sent := 0
	send := func(from int64, name, text string) string {
		t.Helper()
		say(tg, from, name, text)
		sent++
		got, err := tg.WaitSent(ctx, sent)
		if err != nil {
			t.Fatalf("no answer to %q: %v", text, err)
		}
		return got[sent-1].Text
	}

	if got := send(alice, "Alice", "/model"+bot+" big"); !strings.Contains(got, "Model: fake/big") {
		t.Fatalf("the owner's /model%s big answered %q", bot, got)
	}
	first := r.entry(tgKey).SessionID
	for _, cmd := range []string{"/model" + bot, "/model" + bot + " m", "/new" + bot, "/NEW" + bot + " fake/m hi"} {
		if got := send(bob, "Bob", cmd); !strings.Contains(got, "Only allowed members can use /") {
			t.Errorf("a member's %q answered %q, want the refusal", cmd, got)
		}
	}
	if e := r.entry(tgKey); e.ModelOverride != "fake/big" || e.SessionID != first {
		t.Errorf("after a member's refused commands: override %q, session changed %v", e.ModelOverride, e.SessionID != first)
	}
	if got := send(bob, "Bob", "/status"+bot); !strings.Contains(got, "Model: fake/big") {
		t.Errorf("a member's /status%s answered %q", bot, got)
	}
	say(tg, bob, "Bob", "/model@another_bot m") // not for us: dropped unanswered
	if got := send(alice, "Alice", "/new"+bot); !strings.Contains(got, "Started a new session") {
		t.Errorf("the owner's /new%s answered %q", bot, got)
	}
	if e := r.entry(tgKey); e.ModelOverride != "fake/big" || e.SessionID == first {
		t.Errorf("after the owner's /new: override %q, new session %v", e.ModelOverride, e.SessionID != first)
	}
	if got := send(alice, "Alice", bot+" hi"); got == "" {
		t.Error("no answer after /new")
	}
	if got := waitModel(t, model, 1).Body.Model; got != "big" {
		t.Errorf("the group's request went to %q, want big", got)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1 (a command reached the model)", n)
	}
}

// TestModelOverrideNoLongerOffered: a session whose /model choice the
// operator has since taken out of the config (the model out of the lists,
// or its whole provider removed; set here as the entry records it) keeps
// answering, on the agent's model, not on a model nobody prices or chose
// and not with a refusal to every message; /model says why the choice is
// not in force. The next turn tells the person, once, that the session
// now runs on the agent's model and clears the choice.
func TestModelOverrideNoLongerOffered(t *testing.T) {
	for _, gone := range []string{"fake/retired", "gone/x"} {
		tg := telegramtest.Start(t, telegramtest.Options{})
		model := openaitest.NewServer(t)
		r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram"), agents: twoModels()})
		a := &dmAsker{t: t, tg: tg}
		a.ask("hello")
		r.patchEntry(dmKey, func(e *sessions.Entry) { e.ModelOverride = gone })
		if got := a.ask("/model"); !strings.Contains(got, "Model: fake/m (the agent's: this session's "+gone+" is no longer offered)") {
			t.Errorf("%s: /model answered %q; want the agent's model and why the choice is not in force", gone, got)
		}
		notice := a.ask("which model now?")
		if !strings.Contains(notice, gone) || !strings.Contains(notice, "fake/m") {
			t.Errorf("%s: the turn after the model went began with %q, want a notice naming it and the agent's model", gone, notice)
		}
		a.n++
		if got := waitReply(t, tg, a.n); got == "" || strings.Contains(got, "not configured") {
			t.Errorf("%s: the turn answered %q", gone, got)
		}
		if got := waitModel(t, model, 2).Body.Model; got != "m" {
			t.Errorf("%s: a turn of a session overridden to a model no longer offered went to %q, want the agent's m", gone, got)
		}
		if o := r.entry(dmKey).ModelOverride; o != "" {
			t.Errorf("%s: the override %q stays after the notice", gone, o)
		}
		if got := a.ask("and now?"); strings.Contains(got, gone) {
			t.Errorf("%s: the notice came again: %q", gone, got)
		}
	}
}

// TestNewWithModelOnItsOwnLine: "/new provider/model" followed by a
// newline (a message typed on two lines) sets the model and sends the
// lines after it as the new session's first message, as with a space.
func TestNewWithModelOnItsOwnLine(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram"), agents: twoModels()})
	a := &dmAsker{t: t, tg: tg}

	a.ask("hello")
	first := r.entry(dmKey).SessionID
	a.ask("/new fake/big\ntell me\na story")
	if req := waitModel(t, model, 2); req.Body.Model != "big" || req.LastUserText() != "tell me\na story" {
		t.Errorf("/new fake/big<newline>... sent %q to model %q; want the lines after the model to big", req.LastUserText(), req.Body.Model)
	}
	if e := r.entry(dmKey); e.SessionID == first || e.ModelOverride != "fake/big" {
		t.Errorf("after /new fake/big<newline>...: new session %v, override %q; want a new session on fake/big", e.SessionID != first, e.ModelOverride)
	}
}
