package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions"
)

// scriptModel answers each model call with the next step of its script
// (a step sees the request, so it can use what earlier turns produced),
// then with "done".
type scriptModel struct {
	mu    sync.Mutex
	steps []func(req llm.Request) sessions.Message
	reqs  []llm.Request
}

func (m *scriptModel) Name() string { return "fake" }

func (m *scriptModel) Stream(_ context.Context, req llm.Request, _ func(llm.Event)) (sessions.Message, error) {
	m.mu.Lock()
	n := len(m.reqs)
	m.reqs = append(m.reqs, req)
	var step func(llm.Request) sessions.Message
	if n < len(m.steps) {
		step = m.steps[n]
	}
	m.mu.Unlock()
	msg := textMsg("done")
	if step != nil {
		msg = step(req)
	}
	msg.Usage = &sessions.Usage{Input: 1, Output: 1, TotalTokens: 2}
	return msg, nil
}

func (m *scriptModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

func textMsg(text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopEnd,
		Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}}
}

// toolCalls is an assistant message calling the message tool once per args.
func toolCalls(args ...map[string]any) sessions.Message {
	m := sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopToolUse}
	for i, a := range args {
		b, _ := json.Marshal(a)
		m.Content = append(m.Content, sessions.Content{Type: sessions.BlockToolCall, ID: fmt.Sprintf("call_%d", i+1),
			Name: agents.MessageToolName, Arguments: b})
	}
	return m
}

// useAgent makes h's turns use provider p and agent a.
func useAgent(t *testing.T, h *harness, p llm.Provider, a agents.Agent) {
	t.Helper()
	r, err := agents.NewRunner(agents.Options{
		Sessions: h.mgr.Backend(), Providers: map[string]llm.Provider{"fake": p},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: []agents.Agent{a}, Logger: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.d.opts.Runner = r
}

var messageAgent = agents.Agent{ID: "main", Tools: agents.Tools{Allow: []string{agents.MessageToolName}}}

// toolResults are the message tool's results in key's transcript, in order.
func toolResults(h *harness, key string) []sessions.Message {
	var out []sessions.Message
	for _, m := range h.history(key) {
		if m.Role == sessions.RoleToolResult && m.ToolName == agents.MessageToolName {
			out = append(out, m)
		}
	}
	return out
}

type wantResult struct {
	isError bool
	text    string
}

func checkResults(t *testing.T, got []sessions.Message, want []wantResult) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d message tool results, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		text := strings.ReplaceAll(got[i].Text(), `\"`, `"`) // the error is a JSON string
		if got[i].IsError != w.isError || !strings.Contains(text, w.text) {
			t.Errorf("result %d = %q (error %v), want error %v containing %q", i+1, got[i].Text(), got[i].IsError, w.isError, w.text)
		}
	}
}

// TestMessageToolTelegram runs turns whose model calls the message tool on
// the fake Bot API: it reacts to the message it answers, replies to an
// earlier one, edits its previous answer, deletes its own tool reply; it
// is refused a user's message, an id never seen in the chat, a message of
// another topic, and any argument naming another chat (which gets no call).
func TestMessageToolTelegram(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	m := &scriptModel{}
	h := newHarness(t, "", nil)
	useAgent(t, h, m, messageAgent)
	useTelegram(t, h, tg, channels.StreamOff)

	m.steps = append(m.steps, func(llm.Request) sessions.Message { return textMsg("first answer") })
	first := in("telegram", "111", "hello")
	h.handle(first)
	h.drained()
	vis := tg.Visible(111)
	if len(vis) != 1 {
		t.Fatalf("chat shows %+v, want the first answer", vis)
	}
	answer := strconv.Itoa(vis[0].MessageID)

	second := in("telegram", "111", "react, then fix your answer")
	var toolReply string
	m.steps = append(m.steps,
		func(req llm.Request) sessions.Message {
			if last := req.Messages[len(req.Messages)-1]; !strings.HasPrefix(last.Text(), "[message_id: "+second.MessageID+"] ") {
				t.Errorf("the model saw %q, want the message id first", last.Text())
			}
			return toolCalls(
				map[string]any{"action": "react", "emoji": "👍"},
				map[string]any{"action": "reply", "messageId": first.MessageID, "text": "about your first message"},
				map[string]any{"action": "edit", "messageId": answer, "text": "first answer, corrected"},
			)
		},
		func(llm.Request) sessions.Message {
			vis := tg.Visible(111)
			toolReply = strconv.Itoa(vis[len(vis)-1].MessageID)
			return toolCalls(
				map[string]any{"action": "delete"}, // the newest own message: the tool's reply
				map[string]any{"action": "edit", "messageId": first.MessageID, "text": "hijacked"},
				map[string]any{"action": "delete", "messageId": "424242"},
				map[string]any{"action": "react", "emoji": "👍", "chatId": "222"},
				map[string]any{"action": "reply", "text": "x", "channel": "discord"},
				map[string]any{"action": "shout"},
			)
		},
		func(llm.Request) sessions.Message { return textMsg("all done") },
	)
	h.handle(second)
	h.drained()

	if r := tg.Reactions(); len(r) != 1 || r[0].ChatID != 111 || strconv.Itoa(r[0].MessageID) != second.MessageID || !slices.Equal(r[0].Emoji, []string{"👍"}) {
		t.Errorf("reactions = %+v, want 👍 on message %s of chat 111 only", r, second.MessageID)
	}
	var replies []telegramtest.Sent
	for _, s := range tg.Sent() {
		if s.Method == "sendMessage" && s.Text == "about your first message" {
			replies = append(replies, s)
		}
	}
	if len(replies) != 1 || strconv.Itoa(replies[0].ReplyTo) != first.MessageID || replies[0].ChatID != 111 {
		t.Fatalf("tool replies = %+v, want one in chat 111 quoting message %s", replies, first.MessageID)
	}
	if strconv.Itoa(replies[0].MessageID) != toolReply {
		t.Fatalf("the reply is %d, the model was told %s", replies[0].MessageID, toolReply)
	}
	del := tg.Deletions()
	if len(del) != 1 || strconv.Itoa(del[0].MessageID) != toolReply {
		t.Errorf("deletions = %+v, want the tool's reply %s", del, toolReply)
	}
	vis = tg.Visible(111)
	var texts []string
	for _, v := range vis {
		texts = append(texts, v.Text)
	}
	if want := []string{"first answer, corrected", "all done"}; !slices.Equal(texts, want) {
		t.Errorf("chat shows %q, want %q", texts, want)
	}
	if n := tg.Calls("editMessageText"); n != 1 {
		t.Errorf("%d editMessageText calls, want the one of the bot's answer", n)
	}
	for _, s := range tg.Sent() {
		if s.ChatID != 111 {
			t.Errorf("a call reached chat %d: %+v", s.ChatID, s)
		}
	}
	key := "agent:main:telegram:direct:111"
	checkResults(t, toolResults(h, key), []wantResult{
		{false, `"action":"react"`},
		{false, `"messageIds":["` + toolReply + `"]`},
		{false, `"messageId":"` + answer + `"`},
		{false, `"messageId":"` + toolReply + `"`},
		{true, "not sent by you"},
		{true, "not one seen in this chat"},
		{true, `unknown argument "chatId"`},
		{true, `unknown argument "channel"`},
		{true, `unknown action "shout"`},
	})

	// A message of another topic of the same chat is another room.
	topicMsg := in("telegram", "-100500", "in topic 7")
	topicMsg.ChatType, topicMsg.ThreadID, topicMsg.IsTopic = channels.Group, "7", true
	other := in("telegram", "-100500", "in topic 9")
	other.ChatType, other.ThreadID, other.IsTopic = channels.Group, "9", true
	m.steps = append(m.steps, func(llm.Request) sessions.Message { return textMsg("seen") },
		func(llm.Request) sessions.Message {
			return toolCalls(map[string]any{"action": "react", "emoji": "👀", "messageId": topicMsg.MessageID})
		})
	rt := *h.d.Runtime()
	room := rt.Room
	rt.Room = func(in channels.Inbound) channels.Room { r := room(in); r.RequireMention = false; return r }
	h.d.SetRuntime(&rt)
	h.handle(topicMsg)
	h.drained()
	h.handle(other)
	h.drained()
	checkResults(t, toolResults(h, "agent:main:telegram:group:-100500:topic:9"), []wantResult{{true, "not one seen in this chat"}})
	if n := len(tg.Reactions()); n != 1 {
		t.Errorf("%d reactions, want no new one", n)
	}
}

// TestMessageToolOffByDefault: an agent without tools.allow: [message] is
// not offered the tool, its inputs carry no message ids, and a call to it
// anyway is an unknown tool that reaches no platform.
func TestMessageToolOffByDefault(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	m := &scriptModel{}
	h := newHarness(t, "", nil)
	useAgent(t, h, m, agents.Agent{ID: "main", Tools: agents.Tools{Allow: []string{"web_fetch"}}})
	useTelegram(t, h, tg, channels.StreamOff)
	m.steps = append(m.steps, func(req llm.Request) sessions.Message {
		for _, tl := range req.Tools {
			if tl.Name == agents.MessageToolName {
				t.Error("message tool offered without tools.allow")
			}
		}
		if txt := req.Messages[len(req.Messages)-1].Text(); txt != "hello" {
			t.Errorf("model saw %q, want the text alone", txt)
		}
		return toolCalls(map[string]any{"action": "react", "emoji": "👍"})
	})
	h.handle(in("telegram", "111", "hello"))
	h.drained()
	checkResults(t, toolResults(h, "agent:main:telegram:direct:111"), []wantResult{{true, `unknown tool "message"`}})
	if n := len(tg.Reactions()); n != 0 {
		t.Errorf("%d reactions made", n)
	}
}

// TestMessageToolDiscord: the same actions on the fake Discord (REST):
// react, reply, edit own, delete own; a user's message is refused; a
// deleted message leaves the record, so a delete without messageId then
// takes the bot's message before it.
func TestMessageToolDiscord(t *testing.T) {
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(fake.Close)
	m := &scriptModel{}
	h := newHarness(t, "", nil)
	useAgent(t, h, m, messageAgent)
	startDiscord(t, h, fake)

	m.steps = append(m.steps, func(llm.Request) sessions.Message { return textMsg("first answer") })
	first := in("discord", "777", "hello")
	h.handle(first)
	h.drained()
	sent := fake.Sent()
	if len(sent) != 1 {
		t.Fatalf("posts = %+v", sent)
	}
	answer := sent[0].MessageID
	second := in("discord", "777", "now act")
	var toolReply string
	m.steps = append(m.steps,
		func(llm.Request) sessions.Message {
			return toolCalls(
				map[string]any{"action": "react", "emoji": "✅", "messageId": first.MessageID},
				map[string]any{"action": "reply", "text": "a reply to you"},
				map[string]any{"action": "edit", "messageId": answer, "text": "edited answer"},
			)
		},
		func(llm.Request) sessions.Message {
			s := fake.Sent()
			toolReply = s[len(s)-1].MessageID
			return toolCalls(
				map[string]any{"action": "delete", "messageId": toolReply},
				map[string]any{"action": "delete", "messageId": second.MessageID},
				map[string]any{"action": "delete"}, // the newest own message left: the first answer
			)
		},
	)
	h.handle(second)
	h.drained()
	if r := fake.Reactions(); len(r) != 1 || r[0].ChannelID != "777" || r[0].MessageID != first.MessageID || r[0].Emoji != "✅" {
		t.Errorf("reactions = %+v", r)
	}
	sent = fake.Sent()
	var reply *discordtest.Sent
	for i := range sent {
		if sent[i].Content == "a reply to you" {
			reply = &sent[i]
		}
	}
	if reply == nil || reply.Reference == nil || reply.Reference.MessageID != second.MessageID || reply.ChannelID != "777" {
		t.Fatalf("tool reply = %+v, want one in 777 answering %s", reply, second.MessageID)
	}
	if e := fake.Edits(); len(e) != 1 || e[0].MessageID != answer || e[0].Content != "edited answer" {
		t.Errorf("edits = %+v", e)
	}
	if d := fake.Deletions(); len(d) != 2 || d[0].MessageID != toolReply || d[1].MessageID != answer {
		t.Errorf("deletions = %+v, want the tool reply %s, then the first answer %s", d, toolReply, answer)
	}
	checkResults(t, toolResults(h, "agent:main:discord:direct:777"), []wantResult{
		{false, `"action":"react"`},
		{false, toolReply},
		{false, answer},
		{false, toolReply},
		{true, "not sent by you"},
		{false, `"messageId":"` + answer + `"`},
	})
}

// TestMessageToolUnsupported: in a chat whose adapter cannot react, edit
// or delete (the test's plain chunking adapter, like the web chat) every
// action is refused with a clear reason and the reply still arrives.
func TestMessageToolUnsupported(t *testing.T) {
	m := &scriptModel{}
	h := newHarness(t, "", nil)
	useAgent(t, h, m, messageAgent)
	m.steps = append(m.steps, func(req llm.Request) sessions.Message {
		if txt := req.Messages[len(req.Messages)-1].Text(); txt != "hello" {
			t.Errorf("model saw %q: no message ids where the tool cannot act", txt)
		}
		return toolCalls(map[string]any{"action": "react", "emoji": "👍"}, map[string]any{"action": "reply", "text": "x"},
			map[string]any{"action": "edit", "text": "x"}, map[string]any{"action": "delete"})
	})
	h.handle(in("tg", "5", "hello"))
	h.drained()
	checkResults(t, toolResults(h, "agent:main:tg:direct:5"), []wantResult{
		{true, "the tg chat does not support reactions"},
		{true, "does not support replies to a message"},
		{true, "does not support editing messages"},
		{true, "does not support deleting messages"},
	})
	if got := h.tg.texts(); !slices.Equal(got, []string{"done"}) {
		t.Errorf("chat got %q, want the answer", got)
	}
}

// TestMessageToolRateLimit: the tool's calls in one chat are spaced by the
// chat's edit gate (shared with streaming drafts), and an edit answered
// with 429 retry_after is tried again once the wait is over; the model
// reads a success.
func TestMessageToolRateLimit(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	m := &scriptModel{}
	h := newHarness(t, "", nil)
	useAgent(t, h, m, messageAgent)
	useTelegram(t, h, tg, channels.StreamOff)
	m.steps = append(m.steps, func(llm.Request) sessions.Message { return textMsg("first") },
		func(llm.Request) sessions.Message {
			return toolCalls(map[string]any{"action": "edit", "text": "first, edited"}, map[string]any{"action": "delete"})
		})
	h.handle(in("telegram", "111", "one"))
	h.drained()
	tg.FailNext("editMessageText", telegramtest.Failure{Code: 429, RetryAfter: 1})
	h.handle(in("telegram", "111", "two"))
	h.drained()
	edits, dels := tg.CallTimes("editMessageText"), tg.CallTimes("deleteMessage")
	if len(edits) != 2 || len(dels) != 1 {
		t.Fatalf("%d edit and %d delete calls, want 2 (a 429, then the edit) and 1", len(edits), len(dels))
	}
	if gap := edits[1].Sub(edits[0]); gap < 900*time.Millisecond {
		t.Errorf("edit retried %v after the 429, want after its retry_after (1 s)", gap)
	}
	if gap := dels[0].Sub(edits[1]); gap < 500*time.Millisecond {
		t.Errorf("delete %v after the edit, want the chat's edit spacing", gap)
	}
	checkResults(t, toolResults(h, "agent:main:telegram:direct:111"), []wantResult{{false, `"action":"edit"`}, {false, `"action":"delete"`}})
	if got := testutil.ToFloat64(h.d.opts.Metrics.MessageTool.WithLabelValues("telegram", "edit", "ok")); got != 1 {
		t.Errorf("gateway_message_tool_actions_total{edit,ok} = %v", got)
	}
}

// TestMessageToolWebChat: the web chat has no platform messages to react
// to, reply to, edit or delete: each action is refused as not supported
// (the model reads why), no message id is shown, and the answer streams.
func TestMessageToolWebChat(t *testing.T) {
	m := &scriptModel{}
	h := newHarness(t, "", nil)
	useAgent(t, h, m, messageAgent)
	w := startWeb(t, h)
	var results []string
	m.steps = append(m.steps,
		func(req llm.Request) sessions.Message {
			if txt := req.Messages[len(req.Messages)-1].Text(); strings.Contains(txt, "message_id") {
				t.Errorf("model saw %q: no message ids in the web chat", txt)
			}
			return toolCalls(map[string]any{"action": "react", "emoji": "👍"}, map[string]any{"action": "edit", "text": "x"})
		},
		func(req llm.Request) sessions.Message {
			for _, msg := range req.Messages {
				if msg.Role == sessions.RoleToolResult {
					results = append(results, msg.Text())
				}
			}
			return textMsg("plain answer")
		})
	evs := w.chat(t, "s1", "hello")
	if len(evs) == 0 || evs[len(evs)-1].Name != "done" {
		t.Fatalf("events %+v, want the answer to end with done", evs)
	}
	if len(results) != 2 || !strings.Contains(results[0], "the web chat does not support reactions") ||
		!strings.Contains(results[1], "the web chat does not support editing messages") {
		t.Errorf("tool results = %q", results)
	}
}

// TestMessageToolSteeredMessage: in steer mode a message that arrives
// while the run is active reaches the model at its next call with its id,
// and the tool may react to it.
func TestMessageToolSteeredMessage(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	m := &scriptModel{}
	h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: "steer", Debounce: time.Millisecond, Cap: 20, Drop: "summarize"}))
	useAgent(t, h, m, messageAgent)
	useTelegram(t, h, tg, channels.StreamOff)
	first, second := in("telegram", "111", "first"), in("telegram", "111", "second")
	started, release := make(chan struct{}), make(chan struct{})
	m.steps = append(m.steps,
		func(llm.Request) sessions.Message {
			close(started)
			<-release
			return toolCalls(map[string]any{"action": "react", "emoji": "👀"}) // the answered message
		},
		func(req llm.Request) sessions.Message {
			if last := req.Messages[len(req.Messages)-1]; last.Text() != "[message_id: "+second.MessageID+"] second" {
				t.Errorf("second model call ends with %q, want the steered message with its id", last.Text())
			}
			return toolCalls(map[string]any{"action": "react", "emoji": "👍", "messageId": second.MessageID})
		})
	h.handle(first)
	<-started
	h.handle(second)
	time.Sleep(50 * time.Millisecond) // past the debounce: queued for the active run
	close(release)
	h.drained()
	checkResults(t, toolResults(h, "agent:main:telegram:direct:111"), []wantResult{{false, "👀"}, {false, "👍"}})
	if re := tg.Reactions(); len(re) != 2 || strconv.Itoa(re[1].MessageID) != second.MessageID {
		t.Errorf("reactions = %+v, want 👍 on the steered message last", re)
	}
}
