package filestore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestUsageQuerySinceReadsOnlyFromThere: /usage asks the ledger for the
// sender's rows since midnight (and the session's since it started). The
// month file holds every turn of the month, and each query read it whole
// to skip all but the last day: at 500,000 turns a day, gigabytes by the
// end of a month for one chat command. A query since a time now starts
// at the last mark before which every row is older, wherever rows were
// written out of order (a turn logged early with a later time, a
// rebuild's old rows appended at the end), and counts the same rows.
func TestUsageQuerySinceReadsOnlyFromThere(t *testing.T) {
	u := NewUsageLog(t.TempDir(), nil)
	t.Cleanup(func() { _ = u.Close() })
	ctx := context.Background()
	midnight := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	row := func(at time.Time, sender string, i int) sessions.UsageRow {
		return sessions.UsageRow{At: at, AgentID: "main", SessionKey: "agent:main:telegram:direct:" + sender,
			SessionID: "s-" + sender + "-" + strconv.Itoa(i), EntryID: "e" + strconv.Itoa(i), Channel: "telegram",
			Room: "telegram:" + sender, SenderID: sender, Provider: "openai", Model: "gpt-4o-mini",
			Input: 1000, Output: 200, Cost: 0.001}
	}
	// The month so far: 40,000 turns from the 1st to yesterday, one of
	// them, near the end, logged with today's time.
	const past, perBatch, early = 40000, 1000, 39500
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	step := midnight.Sub(start) / past
	for b := 0; b < past; b += perBatch {
		rows := make([]sessions.UsageRow, 0, perBatch)
		for i := b; i < b+perBatch; i++ {
			at := start.Add(time.Duration(i) * step).Truncate(time.Millisecond)
			if i == early {
				at = midnight.Add(5 * time.Hour)
			}
			rows = append(rows, row(at, "u"+strconv.Itoa(i%50), i))
		}
		if err := u.Record(ctx, rows...); err != nil {
			t.Fatal(err)
		}
	}
	// Today: 100 turns, then a rebuild's row of two days ago.
	for i := range 100 {
		if err := u.Record(ctx, row(midnight.Add(time.Duration(i)*time.Minute), "u"+strconv.Itoa(i%50), past+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Record(ctx, row(midnight.Add(-48*time.Hour), "u0", past+100)); err != nil {
		t.Fatal(err)
	}
	// u0 today: 2 of the 100 (minutes 0 and 50), and the early-logged one
	// (early is a multiple of 50: u0).
	f := sessions.UsageFilter{Channel: "telegram", SenderID: "u0", Since: midnight}
	for q := range 2 {
		before := u.scanned.Load()
		bs, err := u.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		read := u.scanned.Load() - before
		if len(bs) != 1 || bs[0].Turns != 3 || bs[0].Input != 3000 {
			t.Fatalf("query %d: %+v, want u0's 3 turns of today", q, bs)
		}
		t.Logf("query %d read %d bytes", q, read)
		if q == 1 && read > 2*usageMarkEvery {
			t.Errorf("a query since midnight read %d bytes of a month file of %d rows before it: want at most %d", read, past, 2*usageMarkEvery)
		}
	}
	// Since two days ago: the rebuild's row too.
	bs, err := u.Query(ctx, sessions.UsageFilter{Channel: "telegram", SenderID: "u0", Since: midnight.Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var want int64 = 3 + 1
	for i := 0; i < past; i += 50 {
		if at := start.Add(time.Duration(i) * step); i != early && !at.Before(midnight.Add(-48*time.Hour)) {
			want++
		}
	}
	if len(bs) != 1 || bs[0].Turns != want {
		t.Errorf("since two days ago: %+v, want %d turns", bs, want)
	}
}

// BenchmarkUsageQueryTodayAgedMonth is /usage's "you today" query (one
// sender since midnight) on a month file holding 1,000,000 earlier turns
// (two days of a busy bot, 330 MB) and 1,000 of today, after a first
// query (a process's first reads the file whole).
func BenchmarkUsageQueryTodayAgedMonth(b *testing.B) {
	u := NewUsageLog(b.TempDir(), nil)
	b.Cleanup(func() { _ = u.Close() })
	ctx := context.Background()
	midnight := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	row := func(at time.Time, i int) sessions.UsageRow {
		sender := "u" + strconv.Itoa(i%5000)
		return sessions.UsageRow{At: at, AgentID: "main", SessionKey: "agent:main:telegram:direct:" + sender,
			SessionID: "s-" + sender, EntryID: "e" + strconv.Itoa(i), Channel: "telegram",
			Room: "telegram:" + sender, SenderID: sender, Provider: "openai", Model: "gpt-4o-mini",
			Input: 1000, Output: 200, Cost: 0.001}
	}
	const past, today, perBatch = 1_000_000, 1000, 10000
	start := midnight.Add(-48 * time.Hour)
	step := midnight.Sub(start) / past
	for n := 0; n < past+today; n += perBatch {
		rows := make([]sessions.UsageRow, 0, perBatch)
		for i := n; i < min(n+perBatch, past+today); i++ {
			at := start.Add(time.Duration(i) * step).Truncate(time.Millisecond)
			if i >= past {
				at = midnight.Add(time.Duration(i-past) * time.Second)
			}
			rows = append(rows, row(at, i))
		}
		if err := u.Record(ctx, rows...); err != nil {
			b.Fatal(err)
		}
	}
	f := sessions.UsageFilter{Channel: "telegram", SenderID: "u7", Since: midnight}
	if _, err := u.Query(ctx, f); err != nil {
		b.Fatal(err)
	}
	before := u.scanned.Load()
	for b.Loop() {
		if _, err := u.Query(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(u.scanned.Load()-before)/float64(b.N), "bytes-read/op")
}
