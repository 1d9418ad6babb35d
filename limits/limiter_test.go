package limits

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rig is a Limiter over a files counter store in its own directory.
type rig struct {
	t   *testing.T
	l   *Limiter
	clk *clock
	dir string
	reg *prometheus.Registry
}

func newRig(t *testing.T, cfg Config, owners []string, start time.Time) *rig {
	t.Helper()
	return openRig(t, cfg, owners, &clock{t: start}, t.TempDir())
}

func openRig(t *testing.T, cfg Config, owners []string, clk *clock, dir string) *rig {
	t.Helper()
	reg := prometheus.NewRegistry()
	l, err := New(cfg, owners, Options{Counters: filestore.NewLimits(dir, 0), Logger: zaptest.NewLogger(t),
		Registerer: reg, Now: clk.now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &rig{t: t, l: l, clk: clk, dir: dir, reg: reg}
}

func (r *rig) check(s Subject) Decision {
	r.t.Helper()
	return r.l.Check(context.Background(), s)
}

func (r *rig) flush() {
	r.t.Helper()
	if err := r.l.Flush(context.Background()); err != nil {
		r.t.Fatalf("Flush: %v", err)
	}
}

var (
	alice = Subject{AgentID: "main", Channel: "telegram", SenderID: "1", ChatID: "-100"}
	bob   = Subject{AgentID: "main", Channel: "telegram", SenderID: "2", ChatID: "-100"}
)

func usageOf(s Subject, tokens int64, cost float64) Usage {
	return Usage{AgentID: s.AgentID, Channel: s.Channel, ChatID: s.ChatID, Senders: []string{s.SenderID}, Tokens: tokens, CostUSD: cost}
}

func withDefaults(sender, room, agent Scope) Config {
	c := Default()
	c.Defaults = Set{Sender: sender, Room: room, Agent: agent}
	return c
}

// step is one message (or charge, or clock move) of a scenario.
type step struct {
	after  time.Duration // clock moves first
	at     time.Time     // or jumps here
	charge *Usage        // charge this instead of checking
	who    Subject
	allow  bool
	scope  string // of a refusal
	kind   string
	retry  time.Duration // expected RetryAfter of a rate refusal (to the second)
	notice string        // a substring of the notice; "-" means no notice
}

func TestLimiterScenarios(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cu := func(u Usage) *Usage { return &u }
	dailyBerlin := withDefaults(Scope{Daily: Budget{Tokens: 100}}, Scope{}, Scope{})
	dailyBerlin.Timezone, dailyBerlin.ResetAt = "Europe/Berlin", "04:00"
	monthly := withDefaults(Scope{Monthly: Budget{CostUSD: 1}}, Scope{}, Scope{})
	exempt := withDefaults(Scope{Rate: "1/min"}, Scope{}, Scope{})
	exempt.Exempt = []string{"telegram:1"}
	owners := withDefaults(Scope{Rate: "1/min"}, Scope{}, Scope{})
	owners.ExemptOwners = true
	override := withDefaults(Scope{Rate: "1/min"}, Scope{}, Scope{})
	override.Agents = map[string]Set{"vip": {Sender: Scope{Unlimited: true}}, "slow": {Sender: Scope{Rate: "1/h"}}}
	vip, slow := alice, alice
	vip.AgentID, slow.AgentID = "vip", "slow"

	cases := []struct {
		name   string
		cfg    Config
		owners []string
		start  time.Time
		steps  []step
	}{
		{"rate refills and bursts", withDefaults(Scope{Rate: "5/min", Burst: 2}, Scope{}, Scope{}), nil, t0, []step{
			{who: alice, allow: true},
			{who: alice, allow: true},
			{who: alice, scope: ScopeSender, kind: KindRate, retry: 12 * time.Second, notice: "Slow down: try again in 12 s."},
			{after: 6 * time.Second, who: alice, scope: ScopeSender, kind: KindRate, retry: 6 * time.Second, notice: "-"},
			{after: 6 * time.Second, who: alice, allow: true},
			{who: alice, scope: ScopeSender, kind: KindRate, notice: "-"},
			{who: bob, allow: true}, // buckets are per sender
			{after: time.Hour, who: alice, allow: true},
			{who: alice, allow: true}, // refilled to the burst, no more
			{who: alice, scope: ScopeSender, kind: KindRate, retry: 12 * time.Second, notice: "Slow down"},
		}},
		{"room rate counts every sender", withDefaults(Scope{}, Scope{Rate: "2/min"}, Scope{}), nil, t0, []step{
			{who: alice, allow: true},
			{who: bob, allow: true},
			{who: bob, scope: ScopeRoom, kind: KindRate, notice: "This chat is sending"},
			{who: alice, scope: ScopeRoom, kind: KindRate, notice: "This chat is sending"}, // each sender told once
			{who: Subject{AgentID: "main", Channel: "telegram", SenderID: "1", ChatID: "-200"}, allow: true},
		}},
		{"agent rate", withDefaults(Scope{}, Scope{}, Scope{Rate: "1/min"}), nil, t0, []step{
			{who: alice, allow: true},
			{who: Subject{AgentID: "main", Channel: "discord", SenderID: "9", ChatID: "9"}, scope: ScopeAgent, kind: KindRate, notice: "too many messages"},
			{who: Subject{AgentID: "other", Channel: "discord", SenderID: "9", ChatID: "9"}, allow: true},
		}},
		{"a refusal takes nothing from the other buckets", withDefaults(Scope{Rate: "1/min"}, Scope{Rate: "2/min"}, Scope{}), nil, t0, []step{
			{who: alice, allow: true},
			{who: alice, scope: ScopeSender, kind: KindRate},
			{who: alice, scope: ScopeSender, kind: KindRate},
			{who: bob, allow: true}, // the room's second message is still there
			{who: bob, scope: ScopeSender, kind: KindRate},
		}},
		{"daily budget resets at 04:00 Berlin across the spring DST change", dailyBerlin, nil,
			time.Date(2026, 3, 28, 12, 0, 0, 0, berlin), []step{
				{who: alice, allow: true},
				{charge: cu(usageOf(alice, 60, 0))},
				{who: alice, allow: true},
				{charge: cu(usageOf(alice, 40, 0))},
				{who: alice, scope: ScopeSender, kind: KindDaily, notice: "You've reached today's limit; it resets at 04:00 (Europe/Berlin)."},
				{who: bob, allow: true},
				// 03:59 CEST on the 29th: the day that started at 04:00 CET on the 28th lasts 23 h.
				{at: time.Date(2026, 3, 29, 3, 59, 0, 0, berlin), who: alice, scope: ScopeSender, kind: KindDaily, notice: "resets at 04:00"},
				{at: time.Date(2026, 3, 29, 4, 0, 0, 0, berlin), who: alice, allow: true},
				{charge: cu(usageOf(alice, 100, 0))},
				{at: time.Date(2026, 3, 30, 3, 59, 59, 0, berlin), who: alice, scope: ScopeSender, kind: KindDaily, notice: "resets at 04:00"},
				{who: alice, scope: ScopeSender, kind: KindDaily, notice: "-"},
				{at: time.Date(2026, 3, 30, 4, 0, 0, 0, berlin), who: alice, allow: true},
			}},
		{"daily budget across the autumn DST change (a 25 h day)", dailyBerlin, nil,
			time.Date(2026, 10, 24, 5, 0, 0, 0, berlin), []step{
				{charge: cu(usageOf(alice, 100, 0))},
				{at: time.Date(2026, 10, 25, 3, 59, 0, 0, berlin), who: alice, scope: ScopeSender, kind: KindDaily, notice: "resets at 04:00 (Europe/Berlin)"},
				{at: time.Date(2026, 10, 25, 4, 0, 0, 0, berlin), who: alice, allow: true},
			}},
		{"monthly cost budget resets on the 1st", monthly, nil, time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC), []step{
			{charge: cu(usageOf(alice, 10, 0.6))},
			{who: alice, allow: true},
			{charge: cu(usageOf(alice, 10, 0.4))},
			{after: 13 * time.Hour, who: alice, scope: ScopeSender, kind: KindMonthly, notice: "You've reached this month's limit; it resets on 1 February at 00:00 (UTC)."},
			{at: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), who: alice, allow: true},
		}},
		{"a turn's charge is split between its senders", withDefaults(Scope{Daily: Budget{Tokens: 50}}, Scope{Daily: Budget{Tokens: 1000}}, Scope{}), nil, t0, []step{
			{charge: &Usage{AgentID: "main", Channel: "telegram", ChatID: "-100", Senders: []string{"1", "2"}, Tokens: 99}},
			{who: alice, scope: ScopeSender, kind: KindDaily}, // 50 of 99 (the odd token goes to the first)
			{who: bob, allow: true}, // 49
		}},
		{"room budget", withDefaults(Scope{}, Scope{Daily: Budget{CostUSD: 0.5}}, Scope{}), nil, t0, []step{
			{charge: cu(usageOf(alice, 1, 0.5))},
			{who: bob, scope: ScopeRoom, kind: KindDaily, notice: "This chat has reached today's limit; it resets at 00:00 (UTC)."},
		}},
		{"exempt sender", exempt, nil, t0, []step{
			{who: alice, allow: true},
			{who: alice, allow: true},
			{who: alice, allow: true},
			{who: bob, allow: true},
			{who: bob, scope: ScopeSender, kind: KindRate},
		}},
		{"owners exempt with exemptOwners", owners, []string{"2"}, t0, []step{
			{who: bob, allow: true},
			{who: bob, allow: true},
			{who: alice, allow: true},
			{who: alice, scope: ScopeSender, kind: KindRate},
		}},
		{"per-agent override", override, nil, t0, []step{
			{who: alice, allow: true},
			{who: alice, scope: ScopeSender, kind: KindRate},
			{who: vip, allow: true},
			{who: vip, allow: true},
			{who: slow, allow: true},
			{after: 2 * time.Minute, who: alice, allow: true},
			{who: slow, scope: ScopeSender, kind: KindRate, retry: 58 * time.Minute, notice: "Slow down: try again in 58 min."},
		}},
		{"the notice is sent once per window per sender and room", withDefaults(Scope{Rate: "1/h"}, Scope{}, Scope{}), nil, t0, []step{
			{who: alice, allow: true},
			{who: alice, scope: ScopeSender, kind: KindRate, notice: "Slow down"},
			{after: 30 * time.Second, who: alice, scope: ScopeSender, kind: KindRate, notice: "-"},
			// The same sender in a DM: its bucket is per agent, the notice per room.
			{who: Subject{AgentID: "main", Channel: "telegram", SenderID: "1", ChatID: "1"}, scope: ScopeSender, kind: KindRate, notice: "Slow down"},
			{after: 31 * time.Second, who: alice, scope: ScopeSender, kind: KindRate, notice: "Slow down"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.cfg, tc.owners, tc.start)
			var holds []string // of the messages allowed since the last charge
			for i, s := range tc.steps {
				if !s.at.IsZero() {
					r.clk.set(s.at)
				}
				r.clk.add(s.after)
				if s.charge != nil {
					u := *s.charge
					u.Holds, holds = holds, nil // the turn answers them
					r.l.Charge(u)
					if i%2 == 0 {
						r.flush() // flushed or not, the memory copy counts
					}
					continue
				}
				d := r.check(s.who)
				if d.Allow != s.allow {
					t.Fatalf("step %d (%s): Allow = %v (%+v), want %v", i, r.clk.now().Format(time.RFC3339), d.Allow, d, s.allow)
				}
				if s.allow {
					holds = append(holds, d.Hold)
					continue
				}
				if d.Scope != s.scope || d.Kind != s.kind {
					t.Errorf("step %d: refused by %s/%s, want %s/%s", i, d.Scope, d.Kind, s.scope, s.kind)
				}
				if s.retry > 0 && d.RetryAfter.Round(time.Second) != s.retry {
					t.Errorf("step %d: RetryAfter = %s, want %s", i, d.RetryAfter, s.retry)
				}
				switch {
				case s.notice == "-" && d.Notice != "":
					t.Errorf("step %d: notice %q, want none (one per window)", i, d.Notice)
				case s.notice != "-" && s.notice != "" && !strings.Contains(d.Notice, s.notice):
					t.Errorf("step %d: notice %q, want it to contain %q", i, d.Notice, s.notice)
				}
			}
		})
	}
}

// TestDayWindows pins the budget day's bounds around DST changes.
func TestDayWindows(t *testing.T) {
	p, err := compile(Config{Timezone: "Europe/Berlin", ResetAt: "04:00"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	berlin := p.loc
	for _, tc := range []struct {
		at        time.Time
		start     time.Time
		wantHours float64
	}{
		{time.Date(2026, 3, 29, 3, 0, 0, 0, berlin), time.Date(2026, 3, 28, 4, 0, 0, 0, berlin), 23},
		{time.Date(2026, 10, 25, 12, 0, 0, 0, berlin), time.Date(2026, 10, 25, 4, 0, 0, 0, berlin), 24},
		{time.Date(2026, 10, 25, 2, 30, 0, 0, berlin), time.Date(2026, 10, 24, 4, 0, 0, 0, berlin), 25},
		{time.Date(2026, 11, 25, 4, 0, 0, 0, berlin), time.Date(2026, 11, 25, 4, 0, 0, 0, berlin), 24},
		{time.Date(2026, 11, 25, 3, 59, 59, 0, berlin), time.Date(2026, 11, 24, 4, 0, 0, 0, berlin), 24},
	} {
		s, e := p.dayWindow(tc.at)
		if !s.Equal(tc.start) || e.Sub(s).Hours() != tc.wantHours {
			t.Errorf("dayWindow(%s) = %s .. %s (%.0f h), want from %s, %.0f h", tc.at, s, e, e.Sub(s).Hours(), tc.start, tc.wantHours)
		}
	}
	s, e := p.monthWindow(time.Date(2026, 3, 1, 3, 0, 0, 0, berlin))
	if !s.Equal(time.Date(2026, 2, 1, 4, 0, 0, 0, berlin)) || !e.Equal(time.Date(2026, 3, 1, 4, 0, 0, 0, berlin)) {
		t.Errorf("monthWindow before the 1st's reset = %s .. %s", s, e)
	}
}

// TestBudgetSurvivesRestart: charges flushed by one Limiter are read by
// the next one on the same state, which refuses at once.
func TestBudgetSurvivesRestart(t *testing.T) {
	cfg := withDefaults(Scope{Daily: Budget{Tokens: 100}}, Scope{}, Scope{Monthly: Budget{CostUSD: 3}})
	clk := &clock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	r := openRig(t, cfg, nil, clk, dir)
	r.l.Charge(usageOf(alice, 100, 1))
	r.l.Charge(usageOf(bob, 10, 1))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.l.Run(ctx) }()
	cancel() // Run flushes once more when it stops
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r2 := openRig(t, cfg, nil, clk, dir)
	if d := r2.check(alice); d.Allow || d.Kind != KindDaily {
		t.Errorf("after restart alice = %+v, want refused by the daily budget", d)
	}
	d := r2.check(bob)
	if !d.Allow {
		t.Errorf("after restart bob = %+v, want allowed", d)
	}
	u := usageOf(bob, 1, 1) // the agent reaches $3 this month
	u.Holds = []string{d.Hold}
	r2.l.Charge(u)
	if d := r2.check(bob); d.Allow || d.Scope != ScopeAgent || d.Kind != KindMonthly || !strings.Contains(d.Notice, "I've reached this month's limit") {
		t.Errorf("bob after the agent's budget = %+v, want refused by the agent's monthly budget", d)
	}
	if got := testutil.ToFloat64(r2.l.rejects.WithLabelValues(ScopeSender, KindDaily)); got != 1 {
		t.Errorf("gateway_limit_rejections_total{sender,daily} = %v, want 1", got)
	}
}

// TestSharedCounters: two Limiters on one store (two replicas) see each
// other's charges after a flush, also one that charged nothing itself.
func TestSharedCounters(t *testing.T) {
	cfg := withDefaults(Scope{}, Scope{}, Scope{Daily: Budget{Tokens: 100}})
	clk := &clock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	a, b := openRig(t, cfg, nil, clk, dir), openRig(t, cfg, nil, clk, dir)
	d := b.check(alice) // b reads the counter now: 0
	if !d.Allow {
		t.Fatalf("b: %+v", d)
	}
	b.l.Release(d.Hold) // its turn charged nothing
	a.l.Charge(usageOf(alice, 60, 0))
	a.flush()
	b.flush() // b charged nothing: its flush re-reads what a check uses
	d = b.check(bob)
	if !d.Allow {
		t.Fatalf("b at 60 of 100: %+v", d)
	}
	u := usageOf(bob, 40, 0)
	u.Holds = []string{d.Hold}
	b.l.Charge(u)
	b.flush() // b's add returns 100: a's charge included
	if d := b.check(alice); d.Allow || d.Scope != ScopeAgent {
		t.Errorf("b after both flushes: %+v, want refused by the agent's budget", d)
	}
	a.flush()
	if d := a.check(alice); d.Allow || d.Scope != ScopeAgent {
		t.Errorf("a after b's charge: %+v, want refused by the agent's budget", d)
	}
}

// TestStoreFailureKeepsCharges: a failed flush keeps the charges pending
// and the next one writes them.
func TestStoreFailureKeepsCharges(t *testing.T) {
	fs := &failingStore{LimitCounters: filestore.NewLimits(t.TempDir(), 0), fail: true}
	clk := &clock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	l, err := New(withDefaults(Scope{Daily: Budget{Tokens: 10}}, Scope{}, Scope{}), nil,
		Options{Counters: fs, Logger: zaptest.NewLogger(t), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Check(context.Background(), alice); !d.Allow {
		t.Fatalf("a store that fails must not refuse: %+v", d)
	}
	l.Charge(usageOf(alice, 10, 0))
	if err := l.Flush(context.Background()); err == nil {
		t.Fatal("Flush with a failing store: no error")
	}
	if d := l.Check(context.Background(), alice); d.Allow {
		t.Errorf("the charge was lost from memory: %+v", d)
	}
	fs.set(false)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := fs.LimitCounters.LimitUsage(context.Background(), []sessions.LimitKey{{Scope: ScopeSender, Subject: "main/telegram:1", Period: "day",
		Start: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC).Unix()}})
	if err != nil || len(got) != 1 {
		t.Fatalf("stored after the retry: %v, %v", got, err)
	}
	for _, v := range got {
		if v.Tokens != 10 {
			t.Errorf("stored %d tokens, want 10", v.Tokens)
		}
	}
}

type failingStore struct {
	sessions.LimitCounters
	mu   sync.Mutex
	fail bool
}

func (f *failingStore) set(v bool) { f.mu.Lock(); f.fail = v; f.mu.Unlock() }

func (f *failingStore) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return context.DeadlineExceeded
	}
	return nil
}

func (f *failingStore) AddUsage(ctx context.Context, d []sessions.LimitDelta) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.LimitCounters.AddUsage(ctx, d)
}

func (f *failingStore) LimitUsage(ctx context.Context, k []sessions.LimitKey) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.LimitCounters.LimitUsage(ctx, k)
}
