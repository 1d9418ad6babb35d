package sessions

import (
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A daily reset at an hour the clocks skip (spring forward) happens when
// they jump over it; at an hour they pass twice (fall back) it happens at
// the first, once that day. time.Date alone puts a skipped hour an hour
// early in some zones (New York's 02:00 became 01:00 EST) and on the
// previous day in others (Havana's midnight became 23:00 the day before),
// so sessions started in that hour missed the day's reset.
func TestDailyResetAcrossDST(t *testing.T) {
	ny, havana, berlin := mustZone(t, "America/New_York"), mustZone(t, "America/Havana"), mustZone(t, "Europe/Berlin")
	dm := mustKey(t, "agent:main:telegram:direct:42")
	daily := func(hour int, zone string) ResetConfig {
		return ResetConfig{Reset: ResetPolicy{Mode: ResetDaily, AtHour: &hour, Timezone: zone}}
	}
	tests := []struct {
		name        string
		cfg         ResetConfig
		started     time.Time
		now         time.Time
		wantExpired time.Time // zero: fresh
	}{
		{name: "New York 02:00 skipped: a session of 01:30 EST resets at the jump",
			cfg: daily(2, "America/New_York"), started: time.Date(2026, 3, 8, 1, 30, 0, 0, ny),
			now: time.Date(2026, 3, 8, 3, 30, 0, 0, ny), wantExpired: time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)},
		{name: "New York 02:00 skipped: fresh before the jump",
			cfg: daily(2, "America/New_York"), started: time.Date(2026, 3, 8, 1, 30, 0, 0, ny),
			now: time.Date(2026, 3, 8, 6, 59, 59, 0, time.UTC)},
		{name: "New York 02:00 skipped: a session started at the jump is fresh",
			cfg: daily(2, "America/New_York"), started: time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC),
			now: time.Date(2026, 3, 8, 23, 0, 0, 0, ny)},
		{name: "Havana midnight skipped: a session of 23:30 resets at the jump",
			cfg: daily(0, "America/Havana"), started: time.Date(2026, 3, 7, 23, 30, 0, 0, havana),
			now: time.Date(2026, 3, 8, 1, 10, 0, 0, havana), wantExpired: time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)},
		{name: "Havana midnight skipped: a session of 23:05 expires after it started",
			cfg: daily(0, "America/Havana"), started: time.Date(2026, 3, 7, 23, 5, 0, 0, havana),
			now: time.Date(2026, 3, 9, 12, 0, 0, 0, havana), wantExpired: time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)},
		{name: "New York 01:00 twice: reset once, at the first",
			cfg: daily(1, "America/New_York"), started: time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT
			now: time.Date(2026, 11, 1, 6, 10, 0, 0, time.UTC)}, // 01:10 EST
		{name: "New York 01:00 twice: a session of 00:30 resets at the first",
			cfg: daily(1, "America/New_York"), started: time.Date(2026, 11, 1, 0, 30, 0, 0, ny),
			now: time.Date(2026, 11, 1, 6, 10, 0, 0, time.UTC), wantExpired: time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC)},
		{name: "Berlin 02:00 twice: reset once, at the first",
			cfg: daily(2, "Europe/Berlin"), started: time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // 02:30 CEST
			now: time.Date(2026, 10, 25, 1, 10, 0, 0, time.UTC)}, // 02:10 CET
		{name: "Berlin 02:00 twice: a session of 01:30 resets at the first",
			cfg: daily(2, "Europe/Berlin"), started: time.Date(2026, 10, 25, 1, 30, 0, 0, berlin),
			now: time.Date(2026, 10, 25, 1, 10, 0, 0, time.UTC), wantExpired: time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := Entry{CreatedAt: tc.started, SessionStartedAt: tc.started, LastInteractionAt: tc.started}
			at, reason := Expiry(tc.cfg, dm, e, tc.now)
			if !at.Equal(tc.wantExpired) {
				t.Fatalf("Expiry = %v (%q), want %v", at.UTC(), reason, tc.wantExpired)
			}
			if !at.IsZero() && (reason != ReasonDaily || !at.After(tc.started) || at.After(tc.now)) {
				t.Fatalf("Expiry = %v (%q): want daily, after the start %v, not after now %v", at.UTC(), reason, tc.started.UTC(), tc.now.UTC())
			}
			// The store's fast path must agree (FreshBounds).
			sb, _, _ := FreshBounds(tc.cfg, dm, tc.now)
			if within := !e.SessionStartedAt.Before(sb); within != at.IsZero() {
				t.Fatalf("FreshBounds started >= %v says fresh=%v, Expiry says %v", sb.UTC(), within, at.UTC())
			}
		})
	}
}

// In every zone that changes its clocks, for every hour and every day of
// a year: a day's boundary is the first instant its clock reads that hour
// or later, the boundaries only move forward, and lastBoundary and
// nextBoundary find them from either side.
func TestDailyBoundariesEveryHourOfAYear(t *testing.T) {
	zones := []string{"America/New_York", "America/Havana", "America/Santiago", "Europe/Berlin",
		"Australia/Lord_Howe", "Asia/Beirut", "America/Asuncion", "Pacific/Chatham"}
	ts := func(t time.Time, loc *time.Location) time.Time { // the wall clock as a UTC instant
		l := t.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
	}
	for _, z := range zones {
		loc := mustZone(t, z)
		for hour := range 24 {
			prev := boundaryOn(2025, 12, 31, hour, loc)
			for day := 1; day <= 366; day++ {
				wall := time.Date(2026, 1, day, hour, 0, 0, 0, time.UTC)
				b := boundaryOn(2026, 1, day, hour, loc)
				if ts(b, loc).Before(wall) || !ts(b.Add(-time.Second), loc).Before(wall) {
					t.Fatalf("%s %s %02d:00: boundary %v (%v local) is not where the clock first reaches it", z, wall.Format("2006-01-02"), hour, b.UTC(), b.In(loc))
				}
				if !b.After(prev) {
					t.Fatalf("%s %s %02d:00: boundary %v not after the previous day's %v", z, wall.Format("2006-01-02"), hour, b.UTC(), prev.UTC())
				}
				for _, c := range []struct {
					got, want time.Time
					what      string
				}{
					{lastBoundary(b, hour, loc), b, "lastBoundary(b)"},
					{lastBoundary(b.Add(-time.Nanosecond), hour, loc), prev, "lastBoundary(b-1ns)"},
					{nextBoundary(prev, hour, loc), b, "nextBoundary(previous)"},
					{nextBoundary(b.Add(-time.Nanosecond), hour, loc), b, "nextBoundary(b-1ns)"},
				} {
					if !c.got.Equal(c.want) {
						t.Fatalf("%s %s %02d:00: %s = %v, want %v", z, wall.Format("2006-01-02"), hour, c.what, c.got.In(loc), c.want.In(loc))
					}
				}
				prev = b
			}
		}
	}
}
