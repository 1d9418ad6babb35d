package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/agents/mcp"
)

// Every tool offered to models has an input schema the providers take: a
// JSON object with "type": "object" and a "properties" object. Servers
// send less — the Go SDK itself lists a tool without arguments as
// {"type":"object","additionalProperties":false}, others a schema without
// "type", only "$schema", or `true` — and OpenAI refused every request
// offering such a tool ("object schema missing properties"), so no turn of
// an agent given the server's tools got an answer. A tool whose schema is
// no object schema at all (a string's, an array) cannot be called with an
// object of arguments and is left out; the server's other tools stay.
func TestToolSchemasAreObjectSchemas(t *testing.T) {
	srv := newRawHTTPServer(t, rawServer{Tools: `[
{"name":"none","description":"no inputSchema"},
{"name":"null","inputSchema":null},
{"name":"true","inputSchema":true},
{"name":"sdk","inputSchema":{"type":"object","additionalProperties":false}},
{"name":"dialect","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#"}},
{"name":"untyped","inputSchema":{"properties":{"q":{"type":"string"}},"required":["q"]}},
{"name":"nullable","inputSchema":{"type":["object","null"],"properties":{"q":{"type":"string"}}}},
{"name":"whole","inputSchema":{"type":"object","properties":{"q":{"type":"string","maxLength":9}}}},
{"name":"string","inputSchema":{"type":"string"}},
{"name":"array","inputSchema":[1]},
{"name":"badprops","inputSchema":{"type":"object","properties":"object"}},
{"name":"false","inputSchema":false}
]`, Result: `{"content":[{"type":"text","text":"ok"}]}`})
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"raw": {URL: srv.URL}}})
	run(t, m)
	q := map[string]any{"q": map[string]any{"type": "string"}}
	want := map[string]map[string]any{
		"raw__none":     {"type": "object", "properties": map[string]any{}},
		"raw__null":     {"type": "object", "properties": map[string]any{}},
		"raw__true":     {"type": "object", "properties": map[string]any{}},
		"raw__sdk":      {"type": "object", "properties": map[string]any{}, "additionalProperties": false},
		"raw__dialect":  {"type": "object", "properties": map[string]any{}, "$schema": "http://json-schema.org/draft-07/schema#"},
		"raw__untyped":  {"type": "object", "properties": q, "required": []any{"q"}},
		"raw__nullable": {"type": "object", "properties": q},
		"raw__whole":    {"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "maxLength": float64(9)}}},
	}
	got := map[string]map[string]any{}
	for _, tl := range m.Tools(context.Background(), nil) {
		var s map[string]any
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil {
			t.Fatalf("%s: schema %s: %v", tl.Name, tl.InputSchema, err)
		}
		got[tl.Name] = s
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("offered schemas (-want +got):\n%s", d)
	}
	if r := call(t, m, "raw__sdk", ``); text(r) != "ok" {
		t.Fatalf("call = %+v", r)
	}
}

// Every array in an offered tool's schema says what it holds: OpenAI
// refuses a request with a tool whose schema has an array without "items"
// at any depth ("array schema missing items"), which many servers send
// for an array of anything; it is given "items": {} (anything). Values
// that are data, not schemas (default, enum, examples), stay as sent.
func TestToolSchemaArraysHaveItems(t *testing.T) {
	srv := newRawHTTPServer(t, rawServer{Tools: `[{"name":"arrays","inputSchema":{"type":"object","properties":{
"ids":{"type":"array","description":"any ids"},
"grid":{"type":"array","items":{"type":"array"}},
"maybe":{"type":["array","null"]},
"tuple":{"type":"array","prefixItems":[{"type":"string"}]},
"pick":{"anyOf":[{"type":"string"},{"type":"array"}]},
"opt":{"type":"string","default":{"type":"array"},"enum":[{"type":"array"}]},
"default":{"type":"array"}
}}}]`, Result: `{"content":[{"type":"text","text":"ok"}]}`})
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"raw": {URL: srv.URL}}})
	run(t, m)
	tools := m.Tools(context.Background(), nil)
	if len(tools) != 1 {
		t.Fatalf("tools = %v", toolNames(tools))
	}
	want := `{"properties":{` +
		`"default":{"items":{},"type":"array"},` +
		`"grid":{"items":{"items":{},"type":"array"},"type":"array"},` +
		`"ids":{"description":"any ids","items":{},"type":"array"},` +
		`"maybe":{"items":{},"type":["array","null"]},` +
		`"opt":{"default":{"type":"array"},"enum":[{"type":"array"}],"type":"string"},` +
		`"pick":{"anyOf":[{"type":"string"},{"items":{},"type":"array"}]},` +
		`"tuple":{"prefixItems":[{"type":"string"}],"type":"array"}` +
		`},"type":"object"}`
	var got, exp any
	if err := json.Unmarshal(tools[0].InputSchema, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(want), &exp)
	if d := cmp.Diff(exp, got); d != "" {
		t.Fatalf("schema (-want +got):\n%s\n%s", d, tools[0].InputSchema)
	}
}
