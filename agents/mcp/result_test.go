package mcp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/sessions"
)

// A result's text is capped at MaxResultText however many parts it comes
// in: a server answering with many small text blocks (a listing, a search
// hit per block) once put every part past the cap in the transcript as a
// note of its own, so a 16 MiB answer stayed some 16 MiB of text (and took
// seconds of CPU to merge) in every later request of the session.
func TestResultTextCappedAcrossParts(t *testing.T) {
	const parts, size = 30000, 10
	part := fmt.Sprintf(`{"type":"text","text":%q}`, strings.Repeat("a", size))
	result := `{"content":[` + strings.TrimSuffix(strings.Repeat(part+",", parts), ",") + `]}`
	srv := newRawHTTPServer(t, rawServer{Tools: `[{"name":"list","inputSchema":{"type":"object"}}]`, Result: result})
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"raw": {URL: srv.URL}}})
	run(t, m)
	res := call(t, m, "raw__list", `{}`)
	if len(res.Content) != 1 || res.Content[0].Type != sessions.BlockText {
		t.Fatalf("content = %d blocks, want one text block", len(res.Content))
	}
	got := res.Content[0].Text
	if len(got) > mcp.MaxResultText+100 {
		t.Fatalf("result text is %d bytes, want at most %d and a note", len(got), mcp.MaxResultText)
	}
	whole := parts*size + (parts-1)*2 // the parts and the blank lines between them
	note := fmt.Sprintf("\n[cut: %d more bytes of the result were left out]", whole-mcp.MaxResultText)
	if !strings.HasSuffix(got, note) || strings.Count(got, "[cut:") != 1 {
		t.Fatalf("result ends %q, want one note %q", got[max(0, len(got)-120):], note)
	}
	if want := strings.Repeat("a", size) + "\n\n" + strings.Repeat("a", size); !strings.HasPrefix(got, want) {
		t.Fatalf("result starts %q, want the parts apart", got[:30])
	}
}
