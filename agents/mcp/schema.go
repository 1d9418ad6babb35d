package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
)

// emptySchema is the input schema of a tool that declares none.
const emptySchema = `{"type":"object","properties":{}}`

// inputSchema returns a tool's input schema as the model providers take
// it: a JSON object with "type": "object" and a "properties" object, and
// every array in it saying what it holds. MCP servers often send less —
// {"type":"object"} for a tool without arguments (the Go SDK's own form),
// a schema without "type", `true`, {"type":"array"} for an array of
// anything — and OpenAI refuses a request with such a tool ("object
// schema missing properties", "got 'type: None'", "array schema missing
// items"), so every turn offered it failed: those are completed (an
// array gets "items": {}). ok is false for a schema whose root is no
// object schema (a string, an array, `false`): the tool could not be
// called with an object of arguments, as tools/call sends them.
func inputSchema(schema any) (out json.RawMessage, ok bool) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	switch string(bytes.TrimSpace(raw)) {
	case "null", "true", "{}":
		return json.RawMessage(emptySchema), true
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as they came
	if err := dec.Decode(&root); err != nil || root == nil {
		return nil, false
	}
	changed := false
	switch t := root["type"].(type) {
	case nil:
		root["type"], changed = "object", true
	case string:
		if t != "object" {
			return nil, false
		}
	case []any: // ["object","null"]
		if !slices.Contains(t, any("object")) {
			return nil, false
		}
		root["type"], changed = "object", true
	default:
		return nil, false
	}
	switch root["properties"].(type) {
	case nil:
		root["properties"], changed = map[string]any{}, true
	case map[string]any:
	default:
		return nil, false // OpenAI refuses it: "'...' is not of type 'object', 'boolean'"
	}
	if fillItems(root) {
		changed = true
	}
	if !changed {
		return raw, true
	}
	out, err = json.Marshal(root)
	return out, err == nil
}

// notSchemas are the keywords whose values are data, not schemas;
// schemaMaps those whose values map names to schemas.
var (
	notSchemas = []string{"default", "enum", "const", "examples", "example"}
	schemaMaps = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// fillItems gives every array schema in v (a schema, or a list of them)
// without "items" (or "prefixItems") "items": {}, and reports whether it
// changed anything.
func fillItems(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		if isArraySchema(v["type"]) && v["items"] == nil && v["prefixItems"] == nil {
			v["items"], changed = map[string]any{}, true
		}
		for k, sub := range v {
			switch m, isMap := sub.(map[string]any); {
			case slices.Contains(notSchemas, k):
			case slices.Contains(schemaMaps, k) && isMap:
				for _, s := range m {
					if fillItems(s) {
						changed = true
					}
				}
			case fillItems(sub):
				changed = true
			}
		}
	case []any:
		for _, sub := range v {
			if fillItems(sub) {
				changed = true
			}
		}
	}
	return changed
}

func isArraySchema(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "array"
	case []any:
		return slices.Contains(t, any("array"))
	}
	return false
}
