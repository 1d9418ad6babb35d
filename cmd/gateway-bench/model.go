package main

import (
	"fmt"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// benchTool is the built-in tool the fake model calls with -tools: cheap,
// always allowed, and it touches only the calling session.
const benchTool = "sessions_list"

// benchReply scripts the fake model: each call takes think; a turn's
// first tools calls each answer with one call of benchTool (so a
// progress status is edited between model calls), the next with the
// answer, "ack <the message>", in one delta so that a streamed draft never
// shows a prefix of it that would parse as another message's reply.
func benchReply(think time.Duration, tools int) openaitest.ReplyFunc {
	return func(_ int, r openaitest.Request) openaitest.Reply {
		if done := toolResultsSinceUser(r); done < tools {
			return openaitest.Reply{Delay: think, ToolCalls: []openaitest.ToolCall{{
				ID: fmt.Sprintf("call_%d", done+1), Name: benchTool, Arguments: `{"limit":1}`}}}
		}
		return openaitest.Reply{Text: "ack " + r.LastUserText(), Deltas: 1, Delay: think}
	}
}

// newFakes starts a fake Bot API and a fake model answering as in a run
// with no -think and no -tools; the caller closes both.
func newFakes() (*telegramtest.Server, *openaitest.Server) {
	model := openaitest.New()
	model.SetReply(benchReply(0, 0))
	return telegramtest.NewServer(telegramtest.Options{}), model
}

// toolResultsSinceUser counts the tool results after the request's last
// user message: the tool calls this turn has made so far.
func toolResultsSinceUser(r openaitest.Request) int {
	n := 0
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		switch r.Body.Messages[i].Role {
		case goopenai.ChatMessageRoleUser:
			return n
		case goopenai.ChatMessageRoleTool:
			n++
		}
	}
	return n
}
