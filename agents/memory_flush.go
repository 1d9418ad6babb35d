package agents

import (
	"context"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// Memory flush before compaction (issue 27, seed 002): before a session's
// older messages are replaced by a summary, an agent with memory gets one
// silent turn to save what is worth keeping across sessions. The model
// sees the messages about to be summarised (pruned to its history share),
// its saved notes and an instruction, and is offered the memory tools
// only; its calls run as in a turn, and nothing of the flush — the
// instruction, its answer, the tool calls and results — is written to the
// transcript or sent to the chat. The flush is best effort: a model or
// tool failure is logged and the compaction goes on. It runs within the
// compaction's time limit. Its scopes are those of the turn it runs in or
// of the member who ran /compact (a note given no scope is theirs); a
// chat session's flush that would have the agent's shared scope alone
// where the agent keeps per-person or per-room notes does not run
// (sharedOnly).

// memoryFlushPrompt is the flush's instruction (after the notes block).
const memoryFlushPrompt = "The conversation above is about to be compacted: its older messages will be replaced by a summary. " +
	"Before that, save anything worth keeping across sessions (durable facts, preferences, decisions, open commitments) " +
	"with memory_add, or correct a saved note with memory_update; one fact per note, and do not repeat notes already saved. " +
	"Do not answer the conversation. When done, or if there is nothing to save, reply with just " + memoryFlushDone + "."

// memoryFlushDone is what the model answers when it has saved what it wanted.
const memoryFlushDone = "NO_REPLY"

// maxFlushCalls bounds the flush's model calls (each may save several notes).
const maxFlushCalls = 4

// flushMemory runs the flush over msgs, the messages about to be
// summarised. It reports how many memory tool calls ran.
func (r *Runner) flushMemory(ctx context.Context, s *session, msgs []sessions.Message) int {
	if len(s.memory) == 0 || len(msgs) == 0 || sharedOnly(s) {
		return 0
	}
	var tools []tool
	for _, t := range r.tools(ctx, s) {
		if slices.Contains(memoryToolNames, t.def.Name) {
			tools = append(tools, t)
		}
	}
	if !slices.ContainsFunc(tools, func(t tool) bool { return t.def.Name == memoryAddToolName }) {
		return 0 // memory_add denied: nothing to flush with
	}
	system := r.systemPrompt(s)
	prompt := memoryFlushPrompt
	if block := r.readMemory(ctx, s); block != "" {
		prompt = block + "\n\n" + prompt
	}
	budget := int64(float64(s.window)*r.defaults.MaxHistoryShare) - llm.EstimateText(system) - llm.EstimateText(prompt)
	convo := pruneHistory(sessions.Context{Messages: msgs}, budget)
	convo = append(slices.Clone(convo), sessions.UserText(prompt, r.now()))
	ran := 0
	for range maxFlushCalls {
		req := llm.Request{Model: s.model, System: system, Messages: convo, Tools: toolDefs(tools)}
		m, err := r.stream(ctx, s, req, false, nil) // down the model chain, as the summary (fallback.go)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("memory flush before compaction failed; compacting without it", zap.Error(err))
			}
			return ran
		}
		if m.Usage != nil {
			s.st.AddCounters(s.key, sessions.Counters{InputTokens: m.Usage.Input, OutputTokens: m.Usage.Output,
				TotalTokens: m.Usage.Input + m.Usage.Output})
		}
		m.Role = sessions.RoleAssistant
		calls := toolCalls(m)
		if len(calls) == 0 || strings.TrimSpace(m.Text()) == memoryFlushDone {
			break
		}
		convo = append(convo, m)
		for _, call := range calls {
			if !slices.Contains(memoryToolNames, call.Name) { // runTool would find sessions_spawn
				convo = append(convo, sessions.Message{Role: sessions.RoleToolResult, ToolCallID: call.ID, ToolName: call.Name, IsError: true,
					Content: []sessions.Content{{Type: sessions.BlockText, Text: `{"error":"only the memory tools are available now"}`}}})
				continue
			}
			convo = append(convo, r.runTool(ctx, s, tools, call))
			ran++
		}
	}
	if ran > 0 {
		s.log.Info("memory flushed before compaction", zap.Int("tool_calls", ran))
	}
	return ran
}

// sharedOnly reports a flush of a chat session that would have only the
// agent's scope, which every chat of the agent reads, where the agent
// keeps notes per person or per room: a compaction nobody in the chat
// asked for (the API's, the CLI's, one inside an announcement's turn) or
// one inside a turn that answers several people without a room scope.
// It would copy what was said in one chat into all of them, so such a
// compaction runs without a flush. A subagent's session, and an agent that
// keeps only its own notes, have nothing more private to keep them in.
func sharedOnly(s *session) bool {
	if s.key.IsSubagent() || len(s.memory) != 1 {
		return false
	}
	if _, ok := s.memory[sessions.MemoryAgent]; !ok {
		return false
	}
	return slices.ContainsFunc(s.agent.Memory.WithDefaults().Scopes, func(kind string) bool { return kind != sessions.MemoryAgent })
}
