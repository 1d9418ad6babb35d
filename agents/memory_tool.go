package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// The memory tools (memory.go): offered to an agent with memory.enabled
// unless its tools.deny names them. Each acts on the turn's scopes only
// (the agent's, the person it answers, the room it is in): a note of
// another person or room cannot be named.
const (
	memoryAddToolName    = "memory_add"
	memoryUpdateToolName = "memory_update"
	memoryForgetToolName = "memory_forget"
	memorySearchToolName = "memory_search"
)

var memoryToolNames = []string{memoryAddToolName, memoryUpdateToolName, memoryForgetToolName, memorySearchToolName}

// maxMemorySearchResults bounds memory_search's answer.
const maxMemorySearchResults = 20

// memoryNoteInfo is a note as the tools answer it.
type memoryNoteInfo struct {
	Scope string `json:"scope"`
	ID    int64  `json:"id"`
	Text  string `json:"text"`
}

// scopeParam describes the scope argument with the kinds a turn has.
func scopeParam(kinds []string) string {
	b, _ := json.Marshal(kinds)
	return `"scope":{"type":"string","enum":` + string(b) + `,"description":"whose note: sender (the person you answer), ` +
		`room (this group chat) or agent (yours, shared by all your chats); default sender, else room, else agent"}`
}

// memoryKinds are the kinds of s's scopes in show order.
func memoryKinds(s *session) []string {
	var out []string
	for _, k := range memoryOrder {
		if _, ok := s.memory[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// readableKinds are the kinds of the scopes s reads (a sealed sender's
// scope is left out: memory_update and memory_forget cannot name it).
func readableKinds(s *session) []string {
	return slices.DeleteFunc(memoryKinds(s), func(k string) bool { return !s.readable(k) })
}

// readableScopeOf is scopeOf for a tool that shows or changes existing
// notes: a sealed sender's notes are refused, with why.
func readableScopeOf(s *session, kind string) (sessions.MemoryScope, error) {
	if kind == "" {
		kind = defaultKind(s.readable)
	}
	sc, err := scopeOf(s, kind)
	if err == nil && !s.readable(sc.Kind) {
		return sc, toolErrorf("this person's notes are private in a group: they are read and changed only in a direct chat " +
			"(memory_add still saves a new note for them)")
	}
	return sc, err
}

// scopeOf resolves a scope argument in s ("" picks the default: the
// sender's, else the room's, else the agent's; the narrowest the turn has).
func scopeOf(s *session, kind string) (sessions.MemoryScope, error) {
	if kind == "" {
		kind = defaultKind(func(k string) bool { _, ok := s.memory[k]; return ok })
	}
	sc, ok := s.memory[kind]
	if !ok {
		return sc, toolErrorf("scope %q is not available here (available: %s)", kind, strings.Join(memoryKinds(s), ", "))
	}
	return sc, nil
}

// defaultKind is the narrowest kind that has admits: the sender's, else the
// room's, else the agent's.
func defaultKind(has func(kind string) bool) string {
	for _, k := range []string{sessions.MemorySender, sessions.MemoryRoom} {
		if has(k) {
			return k
		}
	}
	return sessions.MemoryAgent
}

// memoryToolErr turns a store error into what the model reads: the
// limits and a missing note are explained, anything else is internal.
func memoryToolErr(err error) error {
	var full *sessions.MemoryFullError
	var long *sessions.NoteTooLongError
	switch {
	case errors.As(err, &full):
		return toolErrorf("memory full: this scope holds its limit of %d notes; update or forget a note first", full.Max)
	case errors.As(err, &long):
		return toolErrorf("note too long: %d bytes, at most %d; shorten it", long.Bytes, long.Max)
	case errors.Is(err, sessions.ErrNoNote):
		return toolErrorf("no such note in this scope (see the ids in your saved notes or memory_search)")
	case errors.Is(err, sessions.ErrBadNote):
		msg := err.Error()
		return toolErrorf("invalid note: %s", msg[strings.LastIndex(msg, ": ")+2:])
	}
	return err
}

// memoryTool returns the constructor of memory tool name in s.
func (r *Runner) memoryTool(name string, s *session) func() tool {
	kinds, readable := memoryKinds(s), readableKinds(s)
	return func() tool {
		switch name {
		case memoryAddToolName:
			return r.memoryAddTool(kinds)
		case memoryUpdateToolName:
			return r.memoryUpdateTool(readable)
		case memoryForgetToolName:
			return r.memoryForgetTool(readable)
		}
		return r.memorySearchTool()
	}
}

func (r *Runner) memoryAddTool(kinds []string) tool {
	return tool{
		def: llm.Tool{
			Name: memoryAddToolName,
			Description: "Save a short durable note that you will see again in later sessions (after /new too): a fact, preference " +
				"or decision worth keeping. One fact per note; do not save secrets or what is already saved.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the note"},` +
				scopeParam(kinds) + `},"required":["text"],"additionalProperties":false}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct{ Text, Scope string }
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			sc, err := scopeOf(s, args.Scope)
			if err != nil {
				return nil, err
			}
			n, err := r.opts.Sessions.Memory().AddNote(ctx, sc, strings.TrimSpace(args.Text), r.now(), s.agent.Memory.Limits())
			if err != nil {
				return nil, memoryToolErr(err)
			}
			return memoryNoteInfo{Scope: sc.Kind, ID: n.ID, Text: n.Text}, nil
		},
	}
}

func (r *Runner) memoryUpdateTool(kinds []string) tool {
	return tool{
		def: llm.Tool{
			Name:        memoryUpdateToolName,
			Description: "Replace the text of one of your saved notes (by its scope and id, as [scope #id] in your saved notes).",
			Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer","minimum":1},"text":{"type":"string"},` +
				scopeParam(kinds) + `},"required":["id","text"],"additionalProperties":false}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct {
				ID          int64
				Text, Scope string
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			sc, err := readableScopeOf(s, args.Scope)
			if err != nil {
				return nil, err
			}
			n, err := r.opts.Sessions.Memory().UpdateNote(ctx, sc, args.ID, strings.TrimSpace(args.Text), r.now(), s.agent.Memory.Limits())
			if err != nil {
				return nil, memoryToolErr(err)
			}
			return memoryNoteInfo{Scope: sc.Kind, ID: n.ID, Text: n.Text}, nil
		},
	}
}

func (r *Runner) memoryForgetTool(kinds []string) tool {
	return tool{
		def: llm.Tool{
			Name:        memoryForgetToolName,
			Description: "Delete one of your saved notes (by its scope and id) when it is wrong, outdated or asked to be forgotten.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer","minimum":1},` +
				scopeParam(kinds) + `},"required":["id"],"additionalProperties":false}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct {
				ID    int64
				Scope string
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			sc, err := readableScopeOf(s, args.Scope)
			if err != nil {
				return nil, err
			}
			if err := r.opts.Sessions.Memory().ForgetNote(ctx, sc, args.ID); err != nil {
				return nil, memoryToolErr(err)
			}
			return map[string]any{"ok": true, "scope": sc.Kind, "id": args.ID}, nil
		},
	}
}

func (r *Runner) memorySearchTool() tool {
	return tool{
		def: llm.Tool{
			Name: memorySearchToolName,
			Description: "Search your saved notes (of this person, this room and your own) for words; " +
				"an empty query lists them, newest last.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words that must all appear (any case)"}},` +
				`"additionalProperties":false}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct{ Query string }
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			words := strings.Fields(strings.ToLower(args.Query))
			var out []memoryNoteInfo
			for _, kind := range readableKinds(s) {
				notes, err := r.opts.Sessions.Memory().Notes(ctx, s.memory[kind])
				if err != nil {
					return nil, fmt.Errorf("memory_search: %w", err)
				}
				for _, n := range notes {
					low := strings.ToLower(n.Text)
					if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(low, w) }) {
						out = append(out, memoryNoteInfo{Scope: kind, ID: n.ID, Text: n.Text})
					}
				}
			}
			more := len(out) > maxMemorySearchResults
			if more {
				out = out[len(out)-maxMemorySearchResults:]
			}
			return map[string]any{"notes": out, "truncated": more}, nil
		},
	}
}
