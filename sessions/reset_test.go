package sessions

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
)

func intp(v int) *int { return &v }

func mustKey(t *testing.T, s string) routing.Key {
	t.Helper()
	k, err := routing.Parse(s)
	if err != nil {
		t.Fatalf("routing.Parse(%q): %v", s, err)
	}
	return k
}

func TestEvaluate(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, ny) }
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }

	daily4 := ResetConfig{Reset: ResetPolicy{Mode: ResetDaily, AtHour: intp(4), Timezone: "America/New_York"}}
	idle60 := ResetConfig{Reset: ResetPolicy{Mode: ResetIdle, IdleMinutes: intp(60)}}
	both := ResetConfig{Reset: ResetPolicy{Mode: ResetDaily, AtHour: intp(4), IdleMinutes: intp(120), Timezone: "America/New_York"}}
	perType := ResetConfig{
		Reset:       ResetPolicy{Mode: ResetDaily, AtHour: intp(4), Timezone: "America/New_York"},
		ResetByType: map[string]ResetPolicy{"group": {Mode: ResetIdle, IdleMinutes: intp(120)}},
	}
	perChannel := ResetConfig{
		Reset:          ResetPolicy{Mode: ResetDaily, AtHour: intp(4), IdleMinutes: intp(30), Timezone: "America/New_York"},
		ResetByType:    map[string]ResetPolicy{"direct": {Mode: ResetDaily, AtHour: intp(4)}},
		ResetByChannel: map[string]ResetPolicy{"discord": {Mode: ResetIdle, IdleMinutes: intp(10080)}},
	}
	off := ResetConfig{Reset: ResetPolicy{Mode: ResetOff, AtHour: intp(4), IdleMinutes: intp(1)}}

	dm := "agent:main:telegram:direct:42"
	group := "agent:main:telegram:group:-100"
	discordDM := "agent:main:discord:direct:42"

	tests := []struct {
		name       string
		cfg        ResetConfig
		key        string
		e          Entry
		now        time.Time
		wantStale  bool
		wantReason string
	}{
		{name: "empty config never resets", cfg: ResetConfig{}, key: dm,
			e: Entry{SessionStartedAt: at(2026, 1, 1, 10, 0), LastInteractionAt: at(2026, 1, 1, 10, 0)}, now: at(2026, 6, 1, 10, 0)},
		{name: "off never resets", cfg: off, key: dm,
			e: Entry{SessionStartedAt: at(2026, 1, 1, 10, 0), LastInteractionAt: at(2026, 1, 1, 10, 0)}, now: at(2026, 6, 1, 10, 0)},

		{name: "daily before boundary fresh", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 4, 0)}, now: at(2026, 5, 2, 3, 59)},
		{name: "daily at boundary stale", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 23, 0)}, now: at(2026, 5, 2, 4, 0), wantStale: true, wantReason: "daily"},
		{name: "daily started after boundary fresh", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 2, 4, 0)}, now: at(2026, 5, 2, 23, 0)},
		{name: "daily before 4am uses yesterday boundary", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 3, 0)}, now: at(2026, 5, 2, 1, 0), wantStale: true, wantReason: "daily"},

		// 2026-03-08: clocks go 02:00 EST -> 03:00 EDT (a 23-hour day).
		{name: "spring forward: 23h day boundary is 04:00 EDT", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: at(2026, 3, 7, 5, 0)}, now: utc(2026, 3, 8, 8, 30), wantStale: true, wantReason: "daily"},
		{name: "spring forward: 03:59 EDT still fresh", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: at(2026, 3, 7, 5, 0)}, now: utc(2026, 3, 8, 7, 59)},
		{name: "spring forward: started 04:00 EDT fresh until the next 04:00", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: utc(2026, 3, 8, 8, 0)}, now: at(2026, 3, 9, 3, 59)},
		// 2026-11-01: clocks go 02:00 EDT -> 01:00 EST (a 25-hour day).
		{name: "fall back: 25h day 03:30 EST still fresh", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: utc(2026, 10, 31, 8, 30)}, now: utc(2026, 11, 1, 8, 30)},
		{name: "fall back: stale at 04:00 EST", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: utc(2026, 10, 31, 8, 30)}, now: utc(2026, 11, 1, 9, 0), wantStale: true, wantReason: "daily"},
		{name: "fall back: repeated 01:30 hour fresh", cfg: daily4, key: dm,
			e: Entry{SessionStartedAt: at(2026, 11, 1, 0, 30)}, now: utc(2026, 11, 1, 6, 30)},

		{name: "idle exactly at limit fresh", cfg: idle60, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 8, 0), LastInteractionAt: at(2026, 5, 1, 10, 0)}, now: at(2026, 5, 1, 11, 0)},
		{name: "idle past limit stale", cfg: idle60, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 8, 0), LastInteractionAt: at(2026, 5, 1, 10, 0)}, now: at(2026, 5, 1, 11, 1), wantStale: true, wantReason: "idle"},
		{name: "idle ignores a day change", cfg: idle60, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 8, 0), LastInteractionAt: at(2026, 5, 2, 10, 0)}, now: at(2026, 5, 2, 10, 30)},
		{name: "heartbeat updatedAt does not extend idle", cfg: idle60, key: dm,
			e:   Entry{SessionStartedAt: at(2026, 5, 1, 8, 0), LastInteractionAt: at(2026, 5, 1, 10, 0), UpdatedAt: at(2026, 5, 1, 11, 59)},
			now: at(2026, 5, 1, 12, 0), wantStale: true, wantReason: "idle"},
		{name: "heartbeat updatedAt does not extend daily", cfg: daily4, key: dm,
			e:   Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 1, 10, 0), UpdatedAt: at(2026, 5, 2, 4, 30)},
			now: at(2026, 5, 2, 5, 0), wantStale: true, wantReason: "daily"},

		{name: "both: idle expires first", cfg: both, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 1, 23, 0)}, now: at(2026, 5, 2, 5, 0), wantStale: true, wantReason: "idle"},
		{name: "both: daily expires first", cfg: both, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 2, 3, 0)}, now: at(2026, 5, 2, 6, 0), wantStale: true, wantReason: "daily"},
		{name: "both: only daily expired", cfg: both, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 2, 3, 30)}, now: at(2026, 5, 2, 4, 30), wantStale: true, wantReason: "daily"},
		{name: "both: neither expired", cfg: both, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 2, 4, 10), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 2, 10, 0)},

		{name: "per type: group uses idle", cfg: perType, key: group,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 2, 10, 0)},
		{name: "per type: group idle stale", cfg: perType, key: group,
			e: Entry{SessionStartedAt: at(2026, 5, 2, 5, 0), LastInteractionAt: at(2026, 5, 2, 5, 0)}, now: at(2026, 5, 2, 7, 1), wantStale: true, wantReason: "idle"},
		{name: "per type: direct falls back to daily", cfg: perType, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 2, 10, 0), wantStale: true, wantReason: "daily"},
		{name: "per type: thread inherits global", cfg: perType, key: group + ":thread:7",
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 2, 10, 0), wantStale: true, wantReason: "daily"},

		{name: "per channel replaces type and global", cfg: perChannel, key: discordDM,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 3, 10, 0)},
		{name: "per channel idle week stale", cfg: perChannel, key: discordDM,
			e: Entry{SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 1, 10, 0)}, now: at(2026, 5, 8, 10, 1), wantStale: true, wantReason: "idle"},
		{name: "other channel uses type then global idle", cfg: perChannel, key: dm,
			e: Entry{SessionStartedAt: at(2026, 5, 2, 5, 0), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 2, 9, 31), wantStale: true, wantReason: "idle"},
		{name: "main key uses entry lastChannel", cfg: perChannel, key: "agent:main:main",
			e: Entry{LastChannel: "discord", SessionStartedAt: at(2026, 5, 1, 10, 0), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 3, 10, 0)},
		{name: "main key without channel uses global", cfg: perChannel, key: "agent:main:main",
			e: Entry{SessionStartedAt: at(2026, 5, 2, 5, 0), LastInteractionAt: at(2026, 5, 2, 9, 0)}, now: at(2026, 5, 2, 10, 0), wantStale: true, wantReason: "idle"},
		{name: "missing sessionStartedAt falls back to createdAt", cfg: daily4, key: dm,
			e: Entry{CreatedAt: at(2026, 5, 1, 10, 0)}, now: at(2026, 5, 2, 10, 0), wantStale: true, wantReason: "daily"},
		{name: "no clocks at all is fresh", cfg: both, key: dm, e: Entry{}, now: at(2026, 5, 2, 10, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			stale, reason := Evaluate(tt.cfg, mustKey(t, tt.key), tt.e, tt.now)
			if stale != tt.wantStale || reason != tt.wantReason {
				t.Errorf("Evaluate = (%v, %q), want (%v, %q)", stale, reason, tt.wantStale, tt.wantReason)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	cfg := ResetConfig{
		Reset:          ResetPolicy{Mode: ResetDaily, AtHour: intp(9), IdleMinutes: intp(30), Timezone: "Europe/Berlin"},
		ResetByType:    map[string]ResetPolicy{"group": {Mode: ResetIdle, IdleMinutes: intp(120)}},
		ResetByChannel: map[string]ResetPolicy{"discord": {Mode: ResetDaily}},
	}
	tests := []struct {
		name, key, channel string
		want               ResetPolicy
	}{
		{"global", "agent:main:telegram:direct:1", "telegram",
			ResetPolicy{Mode: ResetDaily, AtHour: intp(9), IdleMinutes: intp(30), Timezone: "Europe/Berlin"}},
		{"type overrides field by field", "agent:main:telegram:group:1", "telegram",
			ResetPolicy{Mode: ResetIdle, AtHour: intp(9), IdleMinutes: intp(120), Timezone: "Europe/Berlin"}},
		{"channel replaces everything", "agent:main:discord:group:1", "discord",
			ResetPolicy{Mode: ResetDaily, AtHour: intp(4), IdleMinutes: intp(0), Timezone: "Local"}},
		{"empty config", "agent:main:main", "", ResetPolicy{Mode: ResetOff, AtHour: intp(4), IdleMinutes: intp(0), Timezone: "Local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			if tt.name == "empty config" {
				c = ResetConfig{}
			}
			got := c.Resolve(mustKey(t, tt.key), tt.channel)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Resolve (-want +got):\n%s", d)
			}
		})
	}
}

func TestResetConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ResetConfig
		wantErr string // substring; "" means valid
	}{
		{"empty", ResetConfig{}, ""},
		{"spec example", ResetConfig{
			Reset:          ResetPolicy{Mode: ResetDaily, AtHour: intp(4), IdleMinutes: intp(0), Timezone: "Local"},
			ResetByType:    map[string]ResetPolicy{"group": {Mode: ResetIdle, IdleMinutes: intp(120)}, "direct": {}, "thread": {}},
			ResetByChannel: map[string]ResetPolicy{"discord": {Mode: ResetIdle, IdleMinutes: intp(10080)}},
			ResetTriggers:  []string{"/new", "/reset"},
		}, ""},
		{"bad mode", ResetConfig{Reset: ResetPolicy{Mode: "weekly"}}, `session.reset.mode: "weekly"`},
		{"bad hour", ResetConfig{ResetByType: map[string]ResetPolicy{"direct": {AtHour: intp(24)}}}, "session.resetByType.direct.atHour: 24"},
		{"negative idle", ResetConfig{Reset: ResetPolicy{IdleMinutes: intp(-1)}}, "session.reset.idleMinutes: -1"},
		{"idle without minutes", ResetConfig{ResetByType: map[string]ResetPolicy{"group": {Mode: ResetIdle}}}, "session.resetByType.group.idleMinutes: must be > 0"},
		{"idle type inherits minutes", ResetConfig{Reset: ResetPolicy{IdleMinutes: intp(5)}, ResetByType: map[string]ResetPolicy{"group": {Mode: ResetIdle}}}, ""},
		{"channel does not inherit minutes", ResetConfig{Reset: ResetPolicy{IdleMinutes: intp(5)}, ResetByChannel: map[string]ResetPolicy{"discord": {Mode: ResetIdle}}}, "session.resetByChannel.discord.idleMinutes: must be > 0"},
		{"global idle zero", ResetConfig{Reset: ResetPolicy{Mode: ResetIdle, IdleMinutes: intp(0)}}, "session.reset.idleMinutes: must be > 0"},
		{"unknown zone", ResetConfig{Reset: ResetPolicy{Timezone: "Mars/Olympus"}}, "session.reset.timezone"},
		{"unknown type", ResetConfig{ResetByType: map[string]ResetPolicy{"dms": {}}}, "session.resetByType.dms: unknown session type"},
		{"empty trigger", ResetConfig{ResetTriggers: []string{"/new", " "}}, "session.resetTriggers[1]"},
		{"trigger with space", ResetConfig{ResetTriggers: []string{"/new chat"}}, "session.resetTriggers[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: unexpected error %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Validate: no error, want one containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Validate: error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	got := ResetConfig{}.WithDefaults()
	want := ResetConfig{
		Reset:         ResetPolicy{Mode: ResetOff, AtHour: intp(4), IdleMinutes: intp(0), Timezone: "Local"},
		ResetTriggers: []string{"/new", "/reset"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("WithDefaults (-want +got):\n%s", d)
	}
	kept := ResetConfig{ResetTriggers: []string{}}.WithDefaults()
	if kept.ResetTriggers == nil || len(kept.ResetTriggers) != 0 {
		t.Errorf("WithDefaults replaced an explicit empty trigger list: %v", kept.ResetTriggers)
	}
}

func BenchmarkEvaluate(b *testing.B) {
	cfg := ResetConfig{Reset: ResetPolicy{Mode: ResetDaily, AtHour: intp(4), IdleMinutes: intp(120), Timezone: "America/New_York"}}
	k, _ := routing.Parse("agent:main:telegram:direct:42")
	now := time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)
	e := Entry{SessionStartedAt: now.Add(-3 * time.Hour), LastInteractionAt: now.Add(-time.Hour)}
	b.ReportAllocs()
	for b.Loop() {
		Evaluate(cfg, k, e, now)
	}
}
