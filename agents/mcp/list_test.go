package mcp_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
)

// A server whose tools/list pages always name a next page (a cursor it
// repeats, as a server that ignores the cursor does) is listed once: the
// repeated cursor ends the listing. The listing looped until the connect
// timeout, holding every page's tools, so the server never came up.
func TestToolListWithRepeatedCursorEnds(t *testing.T) {
	srv := newRawHTTPServer(t, rawServer{Tools: `[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"}}]`,
		NextCursor: "page-2", Result: `{"content":[{"type":"text","text":"ok"}]}`})
	m := mcp.New(mcp.Options{Backoff: time.Minute})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"loop": {URL: srv.URL, ConnectTimeout: 5 * time.Second}}})
	run(t, m)
	if got := toolNames(m.Tools(context.Background(), nil)); !slices.Equal(got, []string{"loop__a", "loop__b"}) {
		t.Fatalf("tools = %v; status %+v", got, status(m, "loop"))
	}
	if r := call(t, m, "loop__b", `{}`); text(r) != "ok" {
		t.Fatalf("call = %+v", r)
	}
}
