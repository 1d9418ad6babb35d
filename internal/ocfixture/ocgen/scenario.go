package main

import "github.com/gateway/gateway/channels/telegram/telegramtest"

// People and chats of the scenario (Telegram ids).
const (
	Alice  int64 = 1001 // pairs through a pairing code (the pairing store)
	Bob    int64 = 1002 // allowed by the config's allowFrom
	Carol  int64 = 1003 // allowed by the config's allowFrom
	Group  int64 = -1002001
	Forum  int64 = -1003001
	TopicA       = 42
)

// Step is one inbound message and what to wait for.
type Step struct {
	// Covers says what the step is for (the fixture README lists it).
	Covers string
	Msg    telegramtest.Message
	// Pairing: the bot answers with a pairing code, which the generator
	// approves with `openclaw pairing approve telegram CODE`.
	Pairing bool
	// Replies is how many bot messages to that chat to wait for (default 1).
	Replies int
}

func dm(from int64, name, text string) telegramtest.Message {
	return telegramtest.Message{ChatID: from, FromID: from, FromName: name, FromUserName: lower(name), Text: text}
}

func group(chat, from int64, name, text string) telegramtest.Message {
	return telegramtest.Message{ChatID: chat, ChatType: "supergroup", FromID: from, FromName: name, FromUserName: lower(name), Text: text}
}

func topic(chat int64, thread int, from int64, name, text string) telegramtest.Message {
	return telegramtest.Message{ChatID: chat, ChatType: "supergroup", Forum: true, ThreadID: thread, FromID: from,
		FromName: name, FromUserName: lower(name), Text: text}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Scenario is what the generator sends, in order.
func Scenario() []Step {
	return []Step{
		{Covers: "pairing: an unknown sender gets a code; the owner approves it with the CLI",
			Msg: dm(Alice, "Alice", "Hi, can I talk to you?"), Pairing: true},
		{Covers: "DM after pairing", Msg: dm(Alice, "Alice", "Hello, I am Alice. Nice to meet you.")},
		{Covers: "a tool call and its result in the transcript (ls)",
			Msg: dm(Alice, "Alice", "Please look at your workspace. "+MarkTool)},
		{Covers: "compaction (/compact): a compaction entry with a summary", Msg: dm(Alice, "Alice", "/compact")},
		{Covers: "DM after the compaction", Msg: dm(Alice, "Alice", "After the compaction: do you still know me?")},
		{Covers: "second DM user (allowFrom in config)", Msg: dm(Bob, "Bob", "Hi, Bob here.")},
		{Covers: "subagent: sessions_spawn through tool_call; the child session agent:main:subagent:<uuid>",
			Msg: dm(Bob, "Bob", "Count to three in a subagent please. "+MarkSpawn), Replies: 2},
		{Covers: "third DM user", Msg: dm(Carol, "Carol", "Carol says hello.")},
		{Covers: "group (supergroup, no topics)", Msg: group(Group, Carol, "Carol", "Hello group, Carol here.")},
		{Covers: "forum topic", Msg: topic(Forum, TopicA, Bob, "Bob", "First question in the topic.")},
		{Covers: "forum topic, second sender", Msg: topic(Forum, TopicA, Carol, "Carol", "Second question in the topic.")},
	}
}
