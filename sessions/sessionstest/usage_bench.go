package sessionstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// benchRow is the i-th row of a benchmark ledger: 200 sessions, 50
// senders, 3 models, a row every 100 s from 2026-08-01 (100,000 rows span
// about four months).
func benchRow(i int) sessions.UsageRow {
	start := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	return sessions.UsageRow{
		At: start.Add(time.Duration(i) * 100 * time.Second), AgentID: "main",
		SessionKey: fmt.Sprintf("agent:main:telegram:group:-100%d", i%200), SessionID: fmt.Sprintf("00000000-0000-0000-0000-%012d", i%200),
		EntryID: fmt.Sprintf("%08x", i), Channel: "telegram", Room: fmt.Sprintf("telegram:-100%d", i%200),
		SenderID: fmt.Sprint(1000 + i%50), SenderName: fmt.Sprintf("Sender %d", i%50),
		Provider: "openai", Model: []string{"gpt-4.1", "gpt-4.1-mini", "o3"}[i%3],
		Input: 1200, Output: 300, CacheRead: 4000, Cost: 0.0054,
	}
}

// BenchUsageRecord measures recording one turn's row, as dispatch does
// after each turn.
func BenchUsageRecord(b *testing.B, u sessions.UsageLog) {
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := u.Record(ctx, benchRow(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchUsageQuery fills u with n rows (in batches) and measures reports
// over them: all rows by day and by sender, and the last 30 days by
// sender.
func BenchUsageQuery(b *testing.B, u sessions.UsageLog, n int) {
	ctx := context.Background()
	const batch = 5000
	for i := 0; i < n; i += batch {
		rows := make([]sessions.UsageRow, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			rows = append(rows, benchRow(j))
		}
		if err := u.Record(ctx, rows...); err != nil {
			b.Fatal(err)
		}
	}
	last := benchRow(n - 1).At
	for _, c := range []struct {
		name string
		f    sessions.UsageFilter
	}{
		{"all/by=day", sessions.UsageFilter{By: sessions.UsageByDay}},
		{"all/by=sender", sessions.UsageFilter{By: sessions.UsageBySender}},
		{"last30d/by=sender", sessions.UsageFilter{By: sessions.UsageBySender, Since: last.AddDate(0, 0, -30)}},
		{"sender/today", sessions.UsageFilter{Channel: "telegram", SenderID: "1007", Since: last.Truncate(24 * time.Hour)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bs, err := u.Query(ctx, c.f)
				if err != nil || len(bs) == 0 {
					b.Fatalf("Query: %d buckets, %v", len(bs), err)
				}
			}
		})
	}
}
