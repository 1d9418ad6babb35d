package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// tool is one tool the model may call. run returns a JSON-encodable result;
// a *toolError is reported to the model as an error result, any other
// error as a generic one (and logged).
type tool struct {
	def llm.Tool
	run func(ctx context.Context, s *session, args json.RawMessage) (any, error)
	// mcpServer is the MCP server serving the tool ("" for a built-in).
	mcpServer string
}

type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, a ...any) error { return &toolError{msg: fmt.Sprintf(format, a...)} }

// tools returns the tools offered in s, in a stable order, as the agent's
// tool policy allows. A subagent is not offered sessions_spawn (and is
// refused if it calls it anyway).
func (r *Runner) tools(ctx context.Context, s *session) []tool {
	names := withAmbientTool(s, BuiltinTools(s.agent, s.key, r.opts.Dispatch != nil))
	ts := make([]tool, 0, len(names))
	for _, name := range names {
		ts = append(ts, r.builtinTool(name, s))
	}
	return append(ts, r.mcpTools(ctx, s)...) // filtered by the policy inside
}

// builtinTool builds the built-in tool name (one of builtinTools) for s.
// Only the tools offered are built: this runs for every model call.
func (r *Runner) builtinTool(name string, s *session) tool {
	switch name {
	case spawnToolName:
		return r.spawnTool()
	case listToolName:
		return r.listTool()
	case historyToolName:
		return r.historyTool()
	case webFetchToolName:
		return r.webFetchTool()
	case webSearchToolName:
		return r.webSearchTool()
	case MessageToolName:
		return r.messageTool(s.room)
	case searchToolName:
		return r.searchTool()
	case ScheduleToolName:
		return r.scheduleTool()
	case memoryAddToolName, memoryUpdateToolName, memoryForgetToolName, memorySearchToolName:
		return r.memoryTool(name, s)()
	}
	panic(fmt.Sprintf("agents: built-in tool %q has no constructor", name)) // builtinTools and this switch disagree
}

func toolDefs(ts []tool) []llm.Tool {
	out := make([]llm.Tool, len(ts))
	for i, t := range ts {
		out[i] = t.def
	}
	return out
}

// cutShortCall is the result of a tool call in an answer the model's
// output limit cut short (llm.StopLength): it was not run.
const cutShortCall = "not run: your answer was cut short by the output token limit, so this call's arguments may be incomplete; make the call again, with shorter arguments if they were long"

// cutShortResult answers call, of an answer cut short, without running it.
func (r *Runner) cutShortResult(call sessions.Content) sessions.Message {
	b, _ := json.Marshal(map[string]string{"error": cutShortCall})
	return sessions.Message{Role: sessions.RoleToolResult, ToolCallID: call.ID, ToolName: call.Name, IsError: true,
		Content: []sessions.Content{{Type: sessions.BlockText, Text: string(b)}}, Timestamp: r.now().UnixMilli()}
}

// runTool runs one call and returns its toolResult message.
func (r *Runner) runTool(ctx context.Context, s *session, ts []tool, call sessions.Content) sessions.Message {
	res := sessions.Message{Role: sessions.RoleToolResult, ToolCallID: call.ID, ToolName: call.Name}
	var t *tool
	for i := range ts {
		if ts[i].def.Name == call.Name {
			t = &ts[i]
		}
	}
	if t == nil && call.Name == spawnToolName && s.agent.Tools.offers(spawnToolName) {
		st := r.spawnTool() // refused inside for subagents
		t = &st
	}
	var out any
	var err error
	if t == nil {
		err = toolErrorf("unknown tool %q", call.Name)
	} else {
		out, err = t.run(ctx, s, call.Arguments)
	}
	if b, ok := out.(blocksResult); ok && err == nil {
		res.Content, res.IsError, res.Timestamp = b.content, b.isError, r.now().UnixMilli()
		return res
	}
	var text string
	if err != nil {
		res.IsError = true
		var te *toolError
		if errors.As(err, &te) {
			text = te.msg
		} else {
			s.log.Error("tool failed", zap.String("tool", call.Name), zap.Error(err))
			text = "the tool failed with an internal error"
		}
		out = map[string]string{"error": text}
	}
	b, mErr := json.Marshal(out)
	if mErr != nil {
		b, _ = json.Marshal(map[string]string{"error": "unencodable tool result"})
		res.IsError = true
	}
	res.Content = []sessions.Content{{Type: sessions.BlockText, Text: string(b)}}
	res.Timestamp = r.now().UnixMilli()
	return res
}

func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return toolErrorf("invalid arguments: %v", err)
	}
	return nil
}

// visible reports whether the caller session may see e: its own session or
// one it spawned. Chats never see each other's sessions through tools.
func visible(caller routing.Key, e sessions.Entry) bool {
	return e.SessionKey == caller.String() || e.SpawnedBy == caller.String()
}

type sessionInfo struct {
	SessionKey  string    `json:"sessionKey"`
	SessionID   string    `json:"sessionId"`
	Label       string    `json:"label,omitempty"`
	Title       string    `json:"title,omitempty"`
	Model       string    `json:"model,omitempty"`
	UpdatedAt   time.Time `json:"updatedAt"`
	TotalTokens int64     `json:"totalTokens,omitempty"`
	Messages    int       `json:"messageCount,omitempty"`
	SpawnedBy   string    `json:"spawnedBy,omitempty"`
}

func (r *Runner) listTool() tool {
	return tool{
		def: llm.Tool{
			Name:        listToolName,
			Description: "List this session and the subagent sessions it started, most recently updated first.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":100,"description":"at most this many (default 20)"}}}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct {
				Limit int `json:"limit"`
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			if args.Limit <= 0 || args.Limit > 100 {
				args.Limit = 20
			}
			var out []sessionInfo
			for _, id := range r.agentIDs() {
				st, err := r.stores(id)
				if err != nil {
					return nil, err
				}
				list, err := st.List()
				if err != nil {
					return nil, err
				}
				for _, e := range list {
					if visible(s.key, e) {
						out = append(out, sessionInfo{SessionKey: e.SessionKey, SessionID: e.SessionID, Label: e.Label, Title: e.Title,
							Model: e.Model, UpdatedAt: e.UpdatedAt, TotalTokens: e.TotalTokens, Messages: e.MessageCount, SpawnedBy: e.SpawnedBy})
					}
				}
			}
			sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
			if len(out) > args.Limit {
				out = out[:args.Limit]
			}
			return map[string]any{"sessions": out}, nil
		},
	}
}

type historyMessage struct {
	Role      string   `json:"role"`
	Text      string   `json:"text,omitempty"`
	ToolCalls []string `json:"toolCalls,omitempty"`
	ToolName  string   `json:"toolName,omitempty"`
	IsError   bool     `json:"isError,omitempty"`
}

func (r *Runner) historyTool() tool {
	return tool{
		def: llm.Tool{
			Name:        historyToolName,
			Description: "Read the recent messages of this session or of a subagent session it started.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"sessionKey":{"type":"string","description":"a key from sessions_list"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":200,"description":"the last this many messages (default 20)"}},"required":["sessionKey"]}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct {
				SessionKey string `json:"sessionKey"`
				Limit      int    `json:"limit"`
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			if args.Limit <= 0 || args.Limit > 200 {
				args.Limit = 20
			}
			key, err := routing.Parse(args.SessionKey)
			if err != nil {
				return nil, toolErrorf("sessionKey: not a session key")
			}
			if _, ok := r.agents[key.Agent]; !ok {
				return nil, toolErrorf("session not found")
			}
			st, err := r.stores(key.Agent)
			if err != nil {
				return nil, err
			}
			e, ok, err := st.Get(key)
			if err != nil {
				return nil, err
			}
			if !ok || !visible(s.key, e) {
				return nil, toolErrorf("session not found")
			}
			tr, err := st.transcript(e)
			if err != nil {
				return nil, err
			}
			msgs, err := tr.History(ctx)
			if err != nil {
				return nil, err
			}
			if len(msgs) > args.Limit {
				msgs = msgs[len(msgs)-args.Limit:]
			}
			out := make([]historyMessage, 0, len(msgs))
			for _, m := range msgs {
				h := historyMessage{Role: m.Role, Text: m.Text(), ToolName: m.ToolName, IsError: m.IsError}
				for _, c := range toolCalls(m) {
					h.ToolCalls = append(h.ToolCalls, c.Name)
				}
				out = append(out, h)
			}
			return map[string]any{"sessionKey": e.SessionKey, "messages": out}, nil
		},
	}
}

func (r *Runner) agentIDs() []string {
	ids := make([]string, 0, len(r.agents))
	for id := range r.agents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
