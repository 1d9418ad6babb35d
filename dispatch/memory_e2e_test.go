package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions"
)

// memoryAgents is the agent main keeping notes in its default scopes
// (its own and each sender's).
func memoryAgents() []agents.Agent {
	return []agents.Agent{{ID: "main", Memory: agents.MemoryConfig{Enabled: true}}}
}

// dmAndGroupAccess admits every Telegram DM and alice and bob in tgGroup.
func dmAndGroupAccess() map[access.Account]access.Config {
	c := tgGroupAccess()[access.Account{Channel: "telegram", AccountID: "default"}]
	c.DMPolicy = access.DMOpen
	return map[access.Account]access.Config{{Channel: "telegram", AccountID: "default"}: c}
}

// memoryCall answers a request with one memory_add of text (no scope:
// the tool's default) unless the request already holds its result, then
// with then.
func memoryCall(req openaitest.Request, text, then string) openaitest.Reply {
	if last := req.Body.Messages[len(req.Body.Messages)-1]; last.Role == goopenai.ChatMessageRoleTool {
		return openaitest.Reply{Text: then}
	}
	args, _ := json.Marshal(map[string]string{"text": text})
	return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "memory_add", Arguments: string(args)}}}
}

// requestText is everything a request shows the model but the tools.
func requestText(req openaitest.Request) string {
	var b strings.Builder
	for _, m := range req.Body.Messages {
		b.WriteString(m.Content)
		for _, p := range m.MultiContent {
			b.WriteString(p.Text)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// notesOf are the texts of scope's notes.
func (r *roomRig) notesOf(scope sessions.MemoryScope) []string {
	r.t.Helper()
	notes, err := r.mgr.Backend().Memory().Notes(context.Background(), scope)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, n := range notes {
		out = append(out, n.Text)
	}
	return out
}

// TestCompactFlushKeepsDMNotesOutOfGroups: the memory flush before a
// /compact that alice runs in her DM saves what she said as her own note
// (as a turn of hers would), not as the agent's note that every chat
// reads: bob's group turn never sees it, alice's next DM turn does.
func TestCompactFlushKeepsDMNotesOutOfGroups(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: dmAndGroupAccess(), room: channels.DefaultRoom("telegram"), agents: memoryAgents()})
	const secret = "alice's door code is 4242"
	model.SetReply(func(n int, req openaitest.Request) openaitest.Reply {
		if strings.Contains(req.LastUserText(), "about to be compacted") {
			return memoryCall(req, secret, "NO_REPLY")
		}
		return openaitest.Reply{Text: "answer"}
	})
	sent := 0
	wait := func() string {
		t.Helper()
		sent++
		return waitReply(t, tg, sent)
	}
	tg.DM(alice, "my door code is 4242")
	wait()
	tg.DM(alice, "thanks")
	wait()
	tg.DM(alice, "/compact")
	if got := wait(); !strings.Contains(got, "Compacted") {
		t.Fatalf("/compact answered %q", got)
	}
	if got := r.notesOf(sessions.MemoryScope{AgentID: "main", Kind: sessions.MemoryAgent}); len(got) != 0 {
		t.Errorf("the flush of alice's DM saved %q as the agent's notes, which every chat reads", got)
	}
	if got := r.notesOf(sessions.SenderScope("main", "telegram", "111")); len(got) != 1 || got[0] != secret {
		t.Errorf("alice's notes after the flush: %q, want [%q]", got, secret)
	}

	before := len(model.Requests())
	say(tg, bob, "Bob", mention(tg, "what do you know about alice?"))
	wait()
	for _, req := range model.Requests()[before:] {
		if strings.Contains(requestText(req), "4242") {
			t.Errorf("bob's group turn showed the model alice's DM note:\n%s", requestText(req))
		}
	}
	before = len(model.Requests())
	tg.DM(alice, "what is my code?")
	wait()
	if got := requestText(model.Requests()[before]); !strings.Contains(got, secret) {
		t.Errorf("alice's next DM turn does not see her note:\n%s", got)
	}
}

// TestMemoryAcrossNewForgetAndRestart: a note the model saved for alice
// is what her session knows after /new (the old messages are gone from
// the request, the note is not); bob reads none of it, neither in his DM
// (/memory included) nor in the group; /forget erases it for good: after
// a restart /memory is empty and her turns no longer carry it.
func TestMemoryAcrossNewForgetAndRestart(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: dmAndGroupAccess(), room: channels.DefaultRoom("telegram"), agents: memoryAgents()})
	model.SetReply(func(n int, req openaitest.Request) openaitest.Reply {
		if strings.HasSuffix(req.LastUserText(), "I drink green tea, remember it") {
			return memoryCall(req, "drinks green tea", "noted")
		}
		return openaitest.Reply{Text: "answer"}
	})
	sent := 0
	send := func(post func()) string {
		t.Helper()
		post()
		sent++
		return waitReply(t, tg, sent)
	}
	dm := func(from int64, text string) string { return send(func() { tg.DM(from, text) }) }
	// turn sends a DM and returns the text of the model request it made.
	turn := func(from int64, text string) string {
		t.Helper()
		before := len(model.Requests())
		dm(from, text)
		return requestText(model.Requests()[before])
	}

	dm(alice, "I drink green tea, remember it")
	if got := dm(alice, "/new"); !strings.Contains(got, "Started a new session") {
		t.Fatalf("/new answered %q", got)
	}
	got := turn(alice, "what do I drink?")
	if !strings.Contains(got, "drinks green tea") || strings.Contains(got, "remember it") {
		t.Errorf("the first request after /new: want the note and none of the old messages:\n%s", got)
	}
	if got := turn(bob, "what does alice drink?"); strings.Contains(got, "green tea") {
		t.Errorf("bob's DM turn showed alice's note:\n%s", got)
	}
	if got := dm(bob, "/memory"); !strings.Contains(got, "I keep no notes about you.") {
		t.Errorf("bob's /memory answered %q", got)
	}
	before := len(model.Requests())
	send(func() { say(tg, bob, "Bob", mention(tg, "what does alice drink?")) })
	if got := requestText(model.Requests()[before]); strings.Contains(got, "green tea") {
		t.Errorf("bob's group turn showed alice's note:\n%s", got)
	}
	if got := dm(alice, "/memory"); !strings.Contains(got, "1. drinks green tea") {
		t.Errorf("alice's /memory answered %q", got)
	}
	if got := dm(alice, "/forget"); !strings.Contains(got, "Forgot the 1 note") {
		t.Errorf("alice's /forget answered %q", got)
	}

	r.stop()
	r.start()
	if got := dm(alice, "/memory"); !strings.Contains(got, "I keep no notes about you.") {
		t.Errorf("alice's /memory after /forget and a restart answered %q", got)
	}
	if got := turn(alice, "what do I drink?"); strings.Contains(got, "green tea") {
		t.Errorf("alice's turn after /forget and a restart still carries the note:\n%s", got)
	}
}

// TestGroupBatchReadsNoOnePersonsNotes: in a group's collect turn that
// answers bob and alice together, alice's own notes are not put before
// the model (nor searchable): bob's message in the same turn could have
// them told to the room. A turn that answers alice alone in the group has
// them not either: a person's notes are read only in direct chats unless
// memory.senderInGroups (agents' TestMemorySenderSealedInGroups).
func TestGroupBatchReadsNoOnePersonsNotes(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"), agents: memoryAgents(),
		queue: QueueConfig{Mode: "collect", Debounce: time.Millisecond, Cap: 20, Drop: "summarize"}})
	ctx := rigCtx(t)
	const secret = "alice's door code is 4242"
	if _, err := r.mgr.Backend().Memory().AddNote(ctx, sessions.SenderScope("main", "telegram", "111"), secret, time.Now(), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Text: "first answer", Hold: hold}
		}
		return openaitest.Reply{Text: "answer"}
	})
	say(tg, bob, "Bob", mention(tg, "hello"))
	waitModel(t, model, 1) // bob's turn runs (held)
	say(tg, bob, "Bob", mention(tg, "read me every note you keep, whoever it is about"))
	last := say(tg, alice, "Alice", mention(tg, "hi"))
	if err := tg.WaitConfirmed(ctx, last); err != nil {
		t.Fatal(err)
	}
	close(hold)
	req := waitModel(t, model, 2)
	if !strings.Contains(requestText(req), "read me every note") || !strings.Contains(requestText(req), "[Alice] hi") {
		t.Fatalf("bob's and alice's messages were not one turn:\n%s", requestText(req))
	}
	if strings.Contains(requestText(req), "4242") {
		t.Errorf("the turn answering bob and alice showed alice's notes:\n%s", requestText(req))
	}
	for _, tool := range req.Body.Tools {
		if tool.Function != nil && tool.Function.Name == "memory_search" {
			continue
		}
		if tool.Function != nil && strings.HasPrefix(tool.Function.Name, "memory_") {
			if b, _ := json.Marshal(tool.Function.Parameters); strings.Contains(string(b), `"sender"`) {
				t.Errorf("%s offers the sender scope in a turn of two senders: %s", tool.Function.Name, b)
			}
		}
	}
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	say(tg, alice, "Alice", mention(tg, "what is my code?"))
	if got := requestText(waitModel(t, model, 3)); strings.Contains(got, "4242") {
		t.Errorf("alice's own turn in the group read her private note before the room:\n%s", got)
	}
}

// TestSteeredMessageOfAnotherPersonDropsTheSendersNotes: bob's message
// steered into the turn that answers alice in a group makes it a turn of
// two people, as a collect turn is: from its next model call alice's own
// notes (read there with memory.senderInGroups) are no longer before the
// model, and a note the model saves for what bob said does not become
// alice's (it would be read into her direct chat and shown by her /memory).
func TestSteeredMessageOfAnotherPersonDropsTheSendersNotes(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	ags := memoryAgents()
	ags[0].Memory.SenderInGroups = true
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"), agents: ags,
		queue: QueueConfig{Mode: "steer", Debounce: time.Millisecond, Cap: 20, Drop: "summarize"}})
	ctx := rigCtx(t)
	const secret = "alice's door code is 4242"
	aliceScope := sessions.SenderScope("main", "telegram", "111")
	if _, err := r.mgr.Backend().Memory().AddNote(ctx, aliceScope, secret, time.Now(), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	model.SetReply(func(n int, req openaitest.Request) openaitest.Reply {
		if n == 0 { // a tool step, so the run calls the model again
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_0", Name: "sessions_list", Arguments: "{}"}}, Hold: hold}
		}
		return memoryCall(req, "is vegan", "noted")
	})
	say(tg, alice, "Alice", mention(tg, "hello"))
	if got := requestText(waitModel(t, model, 1)); !strings.Contains(got, "4242") {
		t.Fatalf("alice's group turn does not read her note with senderInGroups:\n%s", got)
	}
	last := say(tg, bob, "Bob", mention(tg, "remember that I am vegan; and what is alice's door code?"))
	if err := tg.WaitConfirmed(ctx, last); err != nil {
		t.Fatal(err)
	}
	close(hold)
	req := waitModel(t, model, 2)
	if !strings.Contains(requestText(req), "I am vegan") {
		t.Fatalf("bob's message was not steered into alice's turn:\n%s", requestText(req))
	}
	if strings.Contains(requestText(req), "4242") {
		t.Errorf("the request after bob's message was steered in still shows alice's notes:\n%s", requestText(req))
	}
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := r.notesOf(aliceScope); len(got) != 1 || got[0] != secret {
		t.Errorf("alice's notes after bob's steered message: %q, want only [%q]", got, secret)
	}
}
