package web

import (
	"context"
	"encoding/json"

	"github.com/gateway/gateway/channels"
)

// sseEvent is one event of a chat stream before the final one.
type sseEvent struct {
	name string // SSE event name: delta or tool
	data any
	text bool // a delta of the reply's text
}

// toolEvent is the data of a tool event (SPEC §7: tool {name, ...}).
type toolEvent struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Tool implements channels.ToolStreamer: the streams of the requests out
// answers get `event: tool` with the tool's name and arguments when the
// agent calls it.
func (a *Adapter) Tool(ctx context.Context, out channels.Outbound, name string, args json.RawMessage) {
	if !json.Valid(args) {
		args = nil
	}
	a.push(out, sseEvent{name: "tool", data: toolEvent{Name: name, Arguments: args}})
}
