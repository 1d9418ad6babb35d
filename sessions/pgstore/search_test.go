package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestSearchBodyWithNUL: a message holding U+0000 (which PostgreSQL's json
// operators refuse) is still written, and searchable by its other words;
// tool results are not indexed.
func TestSearchBodyWithNUL(t *testing.T) {
	pgtest.AdminURL(t)
	var c conformanceStores
	st := c.open(t, sessionstest.Options{})
	ctx := context.Background()
	k, err := routing.PeerKey("main", "telegram", "", routing.Direct, "1")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Begin(ctx, k, sessions.Origin{At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	tool := sessions.Message{Role: sessions.RoleToolResult, ToolCallID: "c1", ToolName: "web_fetch",
		Content: []sessions.Content{{Type: sessions.BlockText, Text: "zebra page"}}, Timestamp: time.Now().UnixMilli()}
	if _, err := tr.Append(ctx, sessions.UserText("zebra\x00crossing stripes", time.Now()), tool); err != nil {
		t.Fatalf("append with NUL: %v", err)
	}
	hits, err := st.x.db.Search().Search(ctx, sessions.SearchQuery{Text: "zebra"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Role != sessions.RoleUser || !strings.Contains(hits[0].Snippet, "stripes") {
		t.Fatalf("hits: %+v", hits)
	}
}
