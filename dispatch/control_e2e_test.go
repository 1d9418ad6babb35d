package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// tgDMAccess admits every Telegram DM.
func tgDMAccess() map[access.Account]access.Config {
	return map[access.Account]access.Config{{Channel: "telegram", AccountID: "default"}: {DMPolicy: access.DMOpen}}
}

// twoModels is an agent with a second configured model to switch to.
func twoModels() []agents.Agent {
	return []agents.Agent{{ID: "main", Model: agents.Model{Primary: "fake/m", Fallbacks: []string{"fake/big"}}}}
}

// entry is key's session entry.
func (r *roomRig) entry(key string) sessions.Entry {
	r.t.Helper()
	k, err := routing.Parse(key)
	if err != nil {
		r.t.Fatal(err)
	}
	st, err := r.mgr.Store(k.Agent)
	if err != nil {
		r.t.Fatal(err)
	}
	e, ok, err := st.Get(k)
	if err != nil || !ok {
		r.t.Fatalf("no entry %s: %v", key, err)
	}
	return e
}

// waitReply waits for the n-th message the bot sent and returns its text.
func waitReply(t *testing.T, tg *telegramtest.Server, n int) string {
	t.Helper()
	sent, err := tg.WaitSent(rigCtx(t), n)
	if err != nil {
		t.Fatalf("waiting for reply %d: %v", n, err)
	}
	return sent[n-1].Text
}

// TestModelCommandSwitchesModel: /model lists the configured models and
// the current one; /model big switches the session, the next request goes
// to the other model and /status says so; an unknown name gets a clear
// answer and changes nothing; /model default returns to the agent's.
func TestModelCommandSwitchesModel(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram"), agents: twoModels()})
	const user = 111
	n := 0
	ask := func(text string) string {
		t.Helper()
		tg.DM(user, text)
		n++
		return waitReply(t, tg, n)
	}

	ask("hello")
	if got := waitModel(t, model, 1).Body.Model; got != "m" {
		t.Fatalf("first request went to %q, want m", got)
	}
	if got := ask("/model"); !strings.Contains(got, "Model: fake/m") || !strings.Contains(got, "fake/big") || !strings.Contains(got, "fake/m (current)") {
		t.Errorf("/model answered %q; want the current model and the choices", got)
	}
	if got := ask("/model nosuch/thing"); !strings.Contains(got, `Unknown model "nosuch/thing"`) || !strings.Contains(got, "fake/big") {
		t.Errorf("/model of an unknown name answered %q", got)
	}
	if got := ask("/model big"); !strings.Contains(got, "fake/big") {
		t.Errorf("/model big answered %q", got)
	}
	ask("and now?")
	if got := waitModel(t, model, 2).Body.Model; got != "big" {
		t.Errorf("request after /model big went to %q, want big", got)
	}
	if got := ask("/status"); !strings.Contains(got, "Model: fake/big") {
		t.Errorf("/status after /model big says:\n%s", got)
	}
	key := "agent:main:telegram:direct:111"
	if e := r.entry(key); e.ModelOverride != "fake/big" {
		t.Errorf("entry model override %q, want fake/big", e.ModelOverride)
	}
	if got := ask("/model default"); !strings.Contains(got, "fake/m") {
		t.Errorf("/model default answered %q", got)
	}
	ask("back?")
	if got := waitModel(t, model, 3).Body.Model; got != "m" {
		t.Errorf("request after /model default went to %q, want m", got)
	}
}

// TestThinkCommandSetsReasoningEffort: /think high is kept in the entry,
// sent as reasoning_effort with the next request and shown by /status.
func TestThinkCommandSetsReasoningEffort(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram")})
	tg.DM(111, "/think loud")
	if got := waitReply(t, tg, 1); !strings.Contains(got, "Usage: /think off|low|medium|high") {
		t.Errorf("/think loud answered %q", got)
	}
	tg.DM(111, "/think high")
	if got := waitReply(t, tg, 2); !strings.Contains(got, "Thinking: high") {
		t.Errorf("/think high answered %q", got)
	}
	tg.DM(111, "think hard")
	if got := waitModel(t, model, 1).Body.ReasoningEffort; got != "high" {
		t.Errorf("reasoning_effort %q, want high", got)
	}
	waitReply(t, tg, 3)
	tg.DM(111, "/status")
	if got := waitReply(t, tg, 4); !strings.Contains(got, "Thinking: high") {
		t.Errorf("/status says:\n%s", got)
	}
}

// TestActivationAlwaysAnswersUnmentioned: in a group that requires a
// mention, /activation always (from an allowed member) makes the session
// answer unmentioned messages of admitted senders; a sender the group
// does not list is still refused; /activation mention restores the rule.
func TestActivationAlwaysAnswersUnmentioned(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	acc := tgGroupAccess() // ann (111) and bob (222) are listed: they may run /activation
	room := channels.DefaultRoom("telegram")
	room.HistoryLimit = 0 // unmentioned chatter is not even kept: only the activation admits it
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: acc, room: room})
	ctx := rigCtx(t)
	say(tg, 111, "ann", "/activation always")
	if got := waitReply(t, tg, 1); !strings.Contains(got, "Activation: always") {
		t.Fatalf("/activation always answered %q", got)
	}
	if e := r.entry("agent:main:telegram:group:-100500"); e.GroupActivation != sessions.ActivationAlways {
		t.Errorf("entry activation %q, want always", e.GroupActivation)
	}
	stranger := say(tg, 999, "eve", "not listed")
	if err := tg.WaitConfirmed(ctx, stranger); err != nil {
		t.Fatal(err)
	}
	say(tg, 222, "bob", "no mention here")
	if got := lastUser(waitModel(t, model, 1)); !strings.Contains(got, "no mention here") || strings.Contains(got, "not listed") {
		t.Errorf("model got %q; want bob's unmentioned message and nothing of eve's", got)
	}
	waitReply(t, tg, 2)
	say(tg, 111, "ann", "/activation mention")
	waitReply(t, tg, 3)
	quiet := say(tg, 222, "bob", "chatter again")
	if err := tg.WaitConfirmed(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	say(tg, 222, "bob", "/status")
	if got := waitReply(t, tg, 4); !strings.Contains(got, "Activation: mention") {
		t.Errorf("/status says:\n%s", got)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests; want 1 (chatter after /activation mention starts none)", n)
	}
}

// TestMentionByNameCountsAsMention: in a room with mentionByName, a group
// message that says the bot's display name (Telegram: its first name) is
// answered like a mention; one that does not is not.
func TestMentionByNameCountsAsMention(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("telegram")
	room.HistoryLimit, room.MentionByName = 0, true
	newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: room})
	ctx := rigCtx(t)
	quiet := say(tg, 222, "bob", "nobody in particular")
	if err := tg.WaitConfirmed(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	say(tg, 222, "bob", "test bot, are you there?") // the fake's bot is "Test Bot"
	if got := lastUser(waitModel(t, model, 1)); !strings.Contains(got, "are you there?") || strings.Contains(got, "nobody") {
		t.Errorf("model got %q", got)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests; want 1", n)
	}
}

// TestStatusContextShareFollowsModel: /status gives the context as a
// share of the window of the model the session uses: the agent's before
// /model, the picked model's own (providers.<p>.models.<m>.contextWindow)
// after it.
func TestStatusContextShareFollowsModel(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram"), agents: twoModels(),
		windows: agents.ContextWindows{"fake/big": 1000000}})
	n := 0
	ask := func(text string) string {
		t.Helper()
		tg.DM(111, text)
		n++
		return waitReply(t, tg, n)
	}
	ask("hello")
	if got := ask("/status"); !strings.Contains(got, " of 200000 (") {
		t.Errorf("/status on fake/m says:\n%s\nwant the share of the default 200000 window", got)
	}
	ask("/model big")
	if got := ask("/status"); !strings.Contains(got, " of 1000000 (") {
		t.Errorf("/status after /model big says:\n%s\nwant the share of fake/big's 1000000 window", got)
	}
}

// TestDeleteEndsActivation: /activation always belongs to the session's
// entry; once /delete removed it, the next session answers the room's rule
// (mention) at once, not while the daemon's cache still holds the deleted
// session's setting.
func TestDeleteEndsActivation(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("telegram")
	room.HistoryLimit = 0
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: room})
	ctx := rigCtx(t)
	say(tg, 111, "ann", "/activation always")
	if got := waitReply(t, tg, 1); !strings.Contains(got, "Activation: always") {
		t.Fatalf("/activation always answered %q", got)
	}
	say(tg, 222, "bob", "no mention here")
	waitModel(t, model, 1)
	waitReply(t, tg, 2)
	say(tg, 111, "ann", "/delete")
	if got := waitReply(t, tg, 3); !strings.HasPrefix(got, "Deleted the current session") {
		t.Fatalf("/delete answered %q", got)
	}
	quiet := say(tg, 222, "bob", "chatter after the delete")
	if err := tg.WaitConfirmed(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	r.drained()
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests; want 1 (unmentioned chatter after /delete starts none)", n)
	}
}
