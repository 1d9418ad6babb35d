package sessionstest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transfer"
)

// UsageOpener returns a new, empty usage ledger, or with share (a ledger it
// returned earlier) a second handle on share's storage, as another process
// would open it. It releases what it opened when t ends.
type UsageOpener func(t *testing.T, share sessions.UsageLog) sessions.UsageLog

// TestUsage runs the conformance suite of sessions.UsageLog against the
// ledgers open returns, as parallel subtests.
func TestUsage(t *testing.T, open UsageOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open UsageOpener)
	}{
		{"TotalsMatchHandComputed", testUsageTotals},
		{"GroupByEachDimension", testUsageGroupBy},
		{"FiltersSelect", testUsageFilters},
		{"SecondHandleSeesRows", testUsageShared},
		{"ConcurrentRecordsLoseNothing", testUsageConcurrent},
		{"Refs", testUsageRefs},
		{"RowsAndCopy", testUsageRowsAndCopy},
		{"RefusedInput", testUsageRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

// usageDay is the fixture's first day (UTC); rows span two months.
var usageDay = time.Date(2026, 10, 31, 22, 0, 0, 0, time.UTC)

// UsageFixture is the rows the suite records: two agents, three senders
// (one in two rooms), two models, three UTC days across a month boundary.
// Costs are hand-computed from prices of 3 USD (input), 15 (output), 0.3
// (cache read) and 3.75 (cache write) per million tokens for
// openai/gpt-big, and 0.15 / 0.6 / 0.075 / 0 for openai/gpt-small.
func UsageFixture() []sessions.UsageRow {
	big := func(in, out, cr, cw int64) float64 {
		return float64(in)*3/1e6 + float64(out)*15/1e6 + float64(cr)*0.3/1e6 + float64(cw)*3.75/1e6
	}
	small := func(in, out, cr, cw int64) float64 {
		return float64(in)*0.15/1e6 + float64(out)*0.6/1e6 + float64(cr)*0.075/1e6
	}
	row := func(at time.Duration, agent, key, sid, eid, room, sender, name, model string, in, out, cr, cw int64) sessions.UsageRow {
		cost := big(in, out, cr, cw)
		if model == "gpt-small" {
			cost = small(in, out, cr, cw)
		}
		r := sessions.UsageRow{At: usageDay.Add(at), AgentID: agent, SessionKey: key, SessionID: sid, EntryID: eid,
			Provider: "openai", Model: model, Input: in, Output: out, CacheRead: cr, CacheWrite: cw, Cost: cost}
		if sender != "" {
			r.Channel, r.Room, r.SenderID, r.SenderName = "telegram", room, sender, name
		}
		return r
	}
	const (
		dm  = "agent:main:telegram:direct:100"
		grp = "agent:main:telegram:group:-200"
	)
	return []sessions.UsageRow{
		// 2026-10-31
		row(0, "main", dm, "s-dm", "e1", "telegram:100", "100", "Ann", "gpt-big", 1000, 200, 0, 0),
		row(time.Hour, "main", grp, "s-grp", "e1", "telegram:-200", "100", "Ann B.", "gpt-small", 2000, 500, 1000, 0),
		// 2026-11-01
		row(3*time.Hour, "main", grp, "s-grp", "e2", "telegram:-200", "300", "Cy", "gpt-big", 4000, 1000, 2000, 500),
		row(4*time.Hour, "ops", "agent:ops:main", "s-ops", "e1", "", "", "", "gpt-big", 10000, 0, 0, 0),
		// 2026-11-02
		row(26*time.Hour, "main", dm, "s-dm", "e2", "telegram:100", "100", "Ann", "gpt-small", 100, 50, 0, 0),
	}
}

type usageFixture struct {
	t   *testing.T
	u   sessions.UsageLog
	ctx context.Context
}

func newUsageFixture(t *testing.T, open UsageOpener) *usageFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &usageFixture{t: t, u: open(t, nil), ctx: ctx}
}

func (f *usageFixture) record(u sessions.UsageLog, rows ...sessions.UsageRow) {
	f.t.Helper()
	if err := u.Record(f.ctx, rows...); err != nil {
		f.t.Fatalf("Record: %v", err)
	}
}

func (f *usageFixture) query(u sessions.UsageLog, q sessions.UsageFilter) []sessions.UsageBucket {
	f.t.Helper()
	bs, err := u.Query(f.ctx, q)
	if err != nil {
		f.t.Fatalf("Query(%+v): %v", q, err)
	}
	return bs
}

// approxCost compares costs to a billionth of a dollar (backends sum
// floats in different orders).
var approxCost = cmpopts.EquateApprox(0, 1e-9)

func testUsageTotals(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	f.record(f.u, UsageFixture()...)
	got := f.query(f.u, sessions.UsageFilter{})
	// By hand: gpt-big 1000×3 + 200×15 = 6000 µ$; 4000×3 + 1000×15 +
	// 2000×0.3 + 500×3.75 = 29475 µ$; 10000×3 = 30000 µ$. gpt-small
	// 2000×0.15 + 500×0.6 + 1000×0.075 = 675 µ$; 100×0.15 + 50×0.6 = 45 µ$.
	want := []sessions.UsageBucket{{Key: "total", Turns: 5, Input: 17100, Output: 1750, CacheRead: 3000, CacheWrite: 500,
		Cost: (6000 + 29475 + 30000 + 675 + 45) / 1e6}}
	if d := cmp.Diff(want, got, approxCost); d != "" {
		t.Errorf("total (-want +got):\n%s", d)
	}
	got = f.query(f.u, sessions.UsageFilter{AgentID: "main"})
	want = []sessions.UsageBucket{{Key: "total", Turns: 4, Input: 7100, Output: 1750, CacheRead: 3000, CacheWrite: 500,
		Cost: (6000 + 29475 + 675 + 45) / 1e6}}
	if d := cmp.Diff(want, got, approxCost); d != "" {
		t.Errorf("total of main (-want +got):\n%s", d)
	}
	if got := f.query(f.u, sessions.UsageFilter{AgentID: "nobody"}); len(got) != 0 {
		t.Errorf("agent without rows: got %+v, want no buckets", got)
	}
}

func testUsageGroupBy(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	f.record(f.u, UsageFixture()...)
	b := func(key, label string, turns, in, out, cr, cw int64, microUSD float64) sessions.UsageBucket {
		return sessions.UsageBucket{Key: key, Label: label, Turns: turns, Input: in, Output: out, CacheRead: cr, CacheWrite: cw, Cost: microUSD / 1e6}
	}
	cases := []struct {
		by   string
		want []sessions.UsageBucket
	}{
		{sessions.UsageBySender, []sessions.UsageBucket{
			b("", "", 1, 10000, 0, 0, 0, 30000),
			b("telegram:300", "Cy", 1, 4000, 1000, 2000, 500, 29475),
			b("telegram:100", "Ann", 3, 3100, 750, 1000, 0, 6000+675+45), // the latest name
		}},
		{sessions.UsageBySession, []sessions.UsageBucket{
			b("agent:main:telegram:group:-200", "", 2, 6000, 1500, 3000, 500, 29475+675),
			b("agent:ops:main", "", 1, 10000, 0, 0, 0, 30000),
			b("agent:main:telegram:direct:100", "", 2, 1100, 250, 0, 0, 6045),
		}},
		{sessions.UsageByRoom, []sessions.UsageBucket{
			b("telegram:-200", "", 2, 6000, 1500, 3000, 500, 30150),
			b("", "", 1, 10000, 0, 0, 0, 30000),
			b("telegram:100", "", 2, 1100, 250, 0, 0, 6045),
		}},
		{sessions.UsageByModel, []sessions.UsageBucket{
			b("openai/gpt-big", "", 3, 15000, 1200, 2000, 500, 65475),
			b("openai/gpt-small", "", 2, 2100, 550, 1000, 0, 720),
		}},
		{sessions.UsageByDay, []sessions.UsageBucket{
			b("2026-10-31", "", 2, 3000, 700, 1000, 0, 6675),
			b("2026-11-01", "", 2, 14000, 1000, 2000, 500, 59475),
			b("2026-11-02", "", 1, 100, 50, 0, 0, 45),
		}},
		{sessions.UsageByAgent, []sessions.UsageBucket{
			b("main", "", 4, 7100, 1750, 3000, 500, 36195),
			b("ops", "", 1, 10000, 0, 0, 0, 30000),
		}},
	}
	for _, c := range cases {
		got := f.query(f.u, sessions.UsageFilter{By: c.by})
		if d := cmp.Diff(c.want, got, approxCost); d != "" {
			t.Errorf("by %s (-want +got):\n%s", c.by, d)
		}
	}
}

func testUsageFilters(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	f.record(f.u, UsageFixture()...)
	nov := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		q          sessions.UsageFilter
		turns, in  int64
		microUSD   float64
		wantNoRows bool
	}{
		{name: "since a month boundary", q: sessions.UsageFilter{Since: nov}, turns: 3, in: 14100, microUSD: 59520},
		{name: "until a month boundary", q: sessions.UsageFilter{Until: nov}, turns: 2, in: 3000, microUSD: 6675},
		{name: "since is inclusive", q: sessions.UsageFilter{Since: usageDay.Add(3 * time.Hour)}, turns: 3, in: 14100, microUSD: 59520},
		{name: "until is exclusive", q: sessions.UsageFilter{Since: usageDay, Until: usageDay.Add(time.Hour)}, turns: 1, in: 1000, microUSD: 6000},
		{name: "one sender", q: sessions.UsageFilter{Channel: "telegram", SenderID: "100"}, turns: 3, in: 3100, microUSD: 6720},
		{name: "one sender today", q: sessions.UsageFilter{Channel: "telegram", SenderID: "100", Since: nov.AddDate(0, 0, 1)}, turns: 1, in: 100, microUSD: 45},
		{name: "sender of another channel", q: sessions.UsageFilter{Channel: "discord", SenderID: "100"}, wantNoRows: true},
		{name: "one session", q: sessions.UsageFilter{SessionKey: "agent:main:telegram:group:-200"}, turns: 2, in: 6000, microUSD: 30150},
		{name: "agent and since", q: sessions.UsageFilter{AgentID: "ops", Since: nov}, turns: 1, in: 10000, microUSD: 30000},
		{name: "nothing in range", q: sessions.UsageFilter{Since: nov.AddDate(1, 0, 0)}, wantNoRows: true},
	}
	for _, c := range cases {
		got := f.query(f.u, c.q)
		if c.wantNoRows {
			if len(got) != 0 {
				t.Errorf("%s: got %+v, want no buckets", c.name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Turns != c.turns || got[0].Input != c.in || math.Abs(got[0].Cost-c.microUSD/1e6) > 1e-9 {
			t.Errorf("%s: got %+v, want 1 bucket of %d turns, %d input, %v USD", c.name, got, c.turns, c.in, c.microUSD/1e6)
		}
	}
}

func testUsageShared(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	other := open(t, f.u)
	rows := UsageFixture()
	f.record(f.u, rows[:2]...)
	f.record(other, rows[2:]...)
	for i, u := range []sessions.UsageLog{f.u, other} {
		got := f.query(u, sessions.UsageFilter{})
		if len(got) != 1 || got[0].Turns != int64(len(rows)) {
			t.Errorf("handle %d: got %+v, want the %d rows of both", i, got, len(rows))
		}
	}
}

func testUsageConcurrent(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	other := open(t, f.u)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := f.u
			if w%2 == 1 {
				u = other
			}
			for i := range each {
				r := sessions.UsageRow{At: usageDay.Add(time.Duration(i) * time.Minute), AgentID: "main",
					SessionKey: "agent:main:main", SessionID: fmt.Sprintf("s%d", w), EntryID: fmt.Sprintf("e%d", i),
					Provider: "p", Model: "m", Input: 1, Output: 2, Cost: 0.5}
				if err := u.Record(f.ctx, r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Record: %v", err)
	}
	got := f.query(f.u, sessions.UsageFilter{By: sessions.UsageByModel})
	want := []sessions.UsageBucket{{Key: "p/m", Turns: writers * each, Input: writers * each, Output: 2 * writers * each, Cost: 0.5 * writers * each}}
	if d := cmp.Diff(want, got, approxCost); d != "" {
		t.Errorf("after concurrent records (-want +got):\n%s", d)
	}
}

func testUsageRefs(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	f.record(f.u, UsageFixture()...)
	got, err := f.u.Refs(f.ctx, "main")
	if err != nil {
		t.Fatalf("Refs: %v", err)
	}
	ref := func(sid string, d time.Duration) sessions.UsageRef {
		return sessions.UsageRef{SessionID: sid, At: usageDay.Add(d).UnixMilli()}
	}
	want := map[sessions.UsageRef]bool{ref("s-dm", 0): true, ref("s-grp", time.Hour): true, ref("s-grp", 3*time.Hour): true,
		ref("s-dm", 26*time.Hour): true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Refs(main) (-want +got):\n%s", d)
	}
	if got, err := f.u.Refs(f.ctx, "nobody"); err != nil || len(got) != 0 {
		t.Errorf("Refs(nobody) = %v, %v; want none", got, err)
	}
}

func testUsageRefused(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	good := UsageFixture()[0]
	bad := []struct {
		name string
		edit func(*sessions.UsageRow)
	}{
		{"agent id a path", func(r *sessions.UsageRow) { r.AgentID = "../x" }},
		{"no time", func(r *sessions.UsageRow) { r.At = time.Time{} }},
		{"time finer than ms", func(r *sessions.UsageRow) { r.At = r.At.Add(time.Microsecond) }},
		{"no session id", func(r *sessions.UsageRow) { r.SessionID = "" }},
		{"negative tokens", func(r *sessions.UsageRow) { r.Output = -1 }},
		{"NaN cost", func(r *sessions.UsageRow) { r.Cost = math.NaN() }},
		{"NUL in a name", func(r *sessions.UsageRow) { r.SenderName = "a\x00b" }},
	}
	for _, c := range bad {
		r := good
		c.edit(&r)
		if err := f.u.Record(f.ctx, good, r); err == nil {
			t.Errorf("%s: Record accepted %+v", c.name, r)
		}
	}
	if got := f.query(f.u, sessions.UsageFilter{}); len(got) != 0 {
		t.Errorf("a refused batch stored rows: %+v", got)
	}
	for _, q := range []sessions.UsageFilter{
		{By: "week"}, {AgentID: "Bad Agent"}, {SenderID: "1"},
		{Since: usageDay, Until: usageDay},
	} {
		if _, err := f.u.Query(f.ctx, q); err == nil {
			t.Errorf("Query(%+v) accepted", q)
		}
	}
}

func testUsageRowsAndCopy(t *testing.T, open UsageOpener) {
	f := newUsageFixture(t, open)
	rows := UsageFixture()
	f.record(f.u, rows...)
	var got []sessions.UsageRow
	err := f.u.Rows(f.ctx, sessions.UsageFilter{}, func(r sessions.UsageRow) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatalf("Rows: %v", err)
	}
	byTime := cmpopts.SortSlices(func(a, b sessions.UsageRow) bool { return a.At.Before(b.At) })
	if d := cmp.Diff(rows, got, byTime); d != "" {
		t.Errorf("Rows (-recorded +got):\n%s", d)
	}
	got = nil
	err = f.u.Rows(f.ctx, sessions.UsageFilter{AgentID: "main", Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, func(r sessions.UsageRow) error {
		got = append(got, r)
		return nil
	})
	if err != nil || len(got) != 2 || got[0].AgentID != "main" {
		t.Errorf("Rows of main since 1 Nov: %+v, %v; want 2 rows", got, err)
	}

	to := open(t, nil)
	other := rows[0]
	other.SessionID = "elsewhere"
	f.record(to, rows[4], other) // the target holds one of the rows already, and one of its own
	n, err := transfer.CopyUsage(f.ctx, f.u, to)
	if err != nil || n != 4 {
		t.Fatalf("CopyUsage = %d, %v; want the 4 rows the target lacked", n, err)
	}
	if n, err := transfer.CopyUsage(f.ctx, f.u, to); err != nil || n != 0 {
		t.Errorf("second CopyUsage = %d, %v; want 0", n, err)
	}
	// The target: the source's 5 rows and its own copy of rows[0].
	want := f.query(f.u, sessions.UsageFilter{})
	want[0].Turns++
	want[0].Input += other.Input
	want[0].Output += other.Output
	want[0].Cost += other.Cost
	if d := cmp.Diff(want, f.query(to, sessions.UsageFilter{}), approxCost); d != "" {
		t.Errorf("target after the copy (-want +got):\n%s", d)
	}
}
