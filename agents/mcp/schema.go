package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
)

// emptySchema is the input schema of a tool that declares none.
const emptySchema = `{"type":"object","properties":{}}`

// inputSchema returns a tool's input schema as the model providers take
// it: a JSON object with "type": "object" and a "properties" object.
// MCP servers often send less — {"type":"object"} for a tool without
// arguments (the Go SDK's own form), a schema without "type", `true` —
// and OpenAI refuses a request with such a tool ("object schema missing
// properties", "got 'type: None'"), so every turn offered it failed:
// those are completed. ok is false for a schema whose root is no object
// schema (a string, an array, `false`): the tool could not be called with
// an object of arguments, as tools/call sends them.
func inputSchema(schema any) (out json.RawMessage, ok bool) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	switch string(bytes.TrimSpace(raw)) {
	case "null", "true", "{}":
		return json.RawMessage(emptySchema), true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	changed := false
	if t, present := m["type"]; !present || string(t) != `"object"` {
		var one string
		var many []string
		switch {
		case !present:
		case json.Unmarshal(t, &one) == nil && one == "object":
		case json.Unmarshal(t, &many) == nil && slices.Contains(many, "object"): // ["object","null"]
		default:
			return nil, false
		}
		m["type"], changed = json.RawMessage(`"object"`), true
	}
	switch p := bytes.TrimSpace(m["properties"]); {
	case len(p) == 0 || string(p) == "null":
		m["properties"], changed = json.RawMessage(`{}`), true
	case p[0] != '{':
		return nil, false // OpenAI refuses it: "'...' is not of type 'object', 'boolean'"
	}
	if !changed {
		return raw, true
	}
	out, err = json.Marshal(m)
	return out, err == nil
}
