package filestore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transfer"
)

// TestCopyDelivery moves pending records (with their counters), a
// half-delivered reply and a draft to another state dir; a fresh handle
// on the target holds them all, and a second copy moves nothing.
func TestCopyDelivery(t *testing.T) {
	ctx := context.Background()
	srcDir, dstDir := t.TempDir(), t.TempDir()
	src := openPassive(t, srcDir)
	j := src.Journal()
	at := time.Date(2026, 11, 20, 10, 0, 0, 123456789, time.UTC)
	for i, id := range []string{"telegram:bot:1:100", "telegram:bot:1:101", "discord:x:2:ünï'; DROP --", "web:a:b:c"} {
		payload, _ := json.Marshal(map[string]any{"text": "hello \x00 \xff", "n": i})
		if _, err := j.Accept(ctx, sessions.Record{ID: id, AgentID: "main", SessionKey: "agent:main:main",
			Payload: payload, AcceptedAt: at.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatalf("accept %q: %v", id, err)
		}
	}
	must(t, j.Start("telegram:bot:1:100"))
	must(t, j.Fail("telegram:bot:1:100"))
	must(t, j.Start("telegram:bot:1:100", "telegram:bot:1:101"))
	must(t, j.Done("web:a:b:c"))
	must(t, j.Ready(sessions.Reply{ID: "reply-1", Records: []string{"telegram:bot:1:101"}, AgentID: "main",
		SessionKey: "agent:main:main", Target: json.RawMessage(`{"chat": 1}`), Chunks: []string{"one", "two \x00", "three"},
		EntryID: "abcd0123", CreatedAt: at}))
	must(t, j.Sent("reply-1", 1))
	must(t, j.Draft(sessions.Draft{ID: "draft-1", SessionKey: "agent:main:main", Target: json.RawMessage(`{"chat":1}`),
		MessageID: "555", CreatedAt: at}))
	must(t, src.Close())

	// Fresh handles: a Delivery leaves its own records out of Pending.
	from := openPassive(t, srcDir).Journal()
	dst := openPassive(t, dstDir)
	copied, err := transfer.CopyDelivery(ctx, from, dst.Journal())
	if err != nil {
		t.Fatal(err)
	}
	if copied != (transfer.DeliveryCounts{Pending: 2, Replies: 1, Drafts: 1}) {
		t.Fatalf("copied %+v", copied)
	}
	must(t, dst.Close())
	to := openPassive(t, dstDir).Journal()
	counts, diffs, err := transfer.CompareDelivery(from, to)
	if err != nil || len(diffs) > 0 || counts != copied {
		t.Fatalf("compare: %+v %v %v", counts, diffs, err)
	}
	pend, err := to.Pending()
	if err != nil || len(pend) != 2 || pend[0].Starts != 2 || pend[0].Failures != 1 {
		t.Fatalf("pending on the target: %+v, %v", pend, err)
	}
	again, err := transfer.CopyDelivery(ctx, from, to)
	if err != nil || again != (transfer.DeliveryCounts{}) {
		t.Fatalf("second copy: %+v, %v", again, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
