package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/usagereport"
)

// withPrices prices the fake model: 1 USD per input token, 2 per output
// token (the fake reports 1 of each per call), so a turn costs 3 USD.
func withPrices(h *harness) {
	h.agent = func(o *agents.Options) {
		o.Prices = agents.Prices{"fake/m": llm.Price{Input: 1e6, Output: 2e6}}
	}
}

// TestTurnsRecordUsageRows: each turn adds one ledger row with the
// session, room, sender and the cost from the price config; /usage reports
// the session and the sender's day.
func TestTurnsRecordUsageRows(t *testing.T) {
	h := newHarness(t, "", nil, withPrices)
	h.handle(in("tg", "7", "one"))
	h.drained()
	h.handle(in("tg", "7", "two"))
	h.drained()
	grp := in("tg", "-100", "in the group")
	grp.ChatType, grp.SenderID, grp.SenderName, grp.ThreadID = channels.Group, "8", "Bea", "5"
	h.handle(grp)
	h.drained()

	ledger := h.mgr.Backend().Usage()
	var got []sessions.UsageBucket
	eventually(t, "three ledger rows", func() bool { // each is written right after its reply
		var err error
		got, err = ledger.Query(h.ctx, sessions.UsageFilter{By: sessions.UsageBySender})
		return err == nil && usagereport.Total(got).Turns == 3
	})
	want := []sessions.UsageBucket{
		{Key: "tg:7", Label: "u7", Turns: 2, Input: 2, Output: 2, Cost: 6},
		{Key: "tg:8", Label: "Bea", Turns: 1, Input: 1, Output: 1, Cost: 3},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("by sender (-want +got):\n%s", d)
	}
	rooms, err := ledger.Query(h.ctx, sessions.UsageFilter{By: sessions.UsageByRoom})
	if err != nil {
		t.Fatal(err)
	}
	if len(rooms) != 2 || rooms[0].Key != "tg:7" || rooms[1].Key != "tg:-100:5" {
		t.Errorf("rooms %+v, want tg:7 and tg:-100:5", rooms)
	}
	models, err := ledger.Query(h.ctx, sessions.UsageFilter{By: sessions.UsageByModel})
	if err != nil || len(models) != 1 || models[0].Key != "fake/m" {
		t.Errorf("models %+v, %v; want fake/m", models, err)
	}

	h.handle(in("tg", "7", "/usage"))
	h.drained()
	texts := h.tg.texts()
	reply := texts[len(texts)-1]
	zone := time.Now().Format("MST")
	wantText := "This session: 2 turns, 4 tokens (in 2, out 2, cache 0), $6.00\n" +
		"You today (since 00:00 " + zone + "): 2 turns, 4 tokens (in 2, out 2, cache 0), $6.00"
	if reply != wantText {
		t.Errorf("/usage:\n%s\nwant:\n%s", reply, wantText)
	}
}

// TestUsageCommandWithoutTurns answers for a chat that has none.
func TestUsageCommandWithoutTurns(t *testing.T) {
	h := newHarness(t, "", nil)
	h.handle(in("tg", "9", "/usage"))
	h.drained()
	texts := h.tg.texts()
	if len(texts) != 1 || !strings.HasPrefix(texts[0], "This session: no turns yet.") || !strings.Contains(texts[0], "You today") {
		t.Errorf("/usage without turns: %q", texts)
	}
}

func TestUsageFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	for v, want := range map[float64]string{0: "$0.0000", 0.01234: "$0.0123", 1.5: "$1.50", 1234.567: "$1234.57"} {
		if got := usd(v); got != want {
			t.Errorf("usd(%v) = %q, want %q", v, got, want)
		}
	}
}

// BenchmarkRecordUsage is what a turn pays for its ledger row on the files
// backend: building the row from the runner's result and one append.
func BenchmarkRecordUsage(b *testing.B) {
	mgr, err := filestore.Open(filestore.Options{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mgr.Close() })
	d := &Dispatcher{opts: Options{Sessions: mgr.Backend()}}
	msg := in("telegram", "-100123", "hello")
	msg.ChatType, msg.SenderID, msg.SenderName = channels.Group, "42", "Ann"
	key, err := routing.PeerKey("main", "telegram", "", routing.Group, "-100123")
	if err != nil {
		b.Fatal(err)
	}
	w := &work{AgentID: "main", Key: key, chatMessage: chatMessage{In: msg}}
	res := agents.Result{SessionID: "0b6f7a52-5d1e-4a59-9d55-3e8a4c1d2f00", EntryID: "a1b2c3d4", Model: "openai/gpt-4.1",
		Usage: sessions.Usage{Input: 1200, Output: 300, CacheRead: 4000, Cost: sessions.Cost{Total: 0.0054}}}
	start := time.Now().Truncate(time.Millisecond)
	log := zap.NewNop()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res.AnsweredAt = start.Add(time.Duration(i) * time.Millisecond)
		d.recordUsage(context.Background(), w, res, log)
		i++
	}
}
