package jobs

import (
	"strings"
	"testing"
	"time"
)

// TestParseWhenNamedZone: a time of day followed by a zone is read in that
// zone, the zone is not left in the text, and a recurring job keeps it; an
// abbreviation or an unknown Area/City is refused; a word that only looks
// like one is the text.
func TestParseWhenNamedZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 6, 30, 0, 0, time.UTC) // 07:30 in Berlin
	for _, c := range []struct {
		in   string
		at   time.Time
		tz   string // a recurring job's zone
		text string
	}{
		{"09:00 UTC standup", time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), "", "standup"},
		{"at 09:00 GMT standup", time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), "", "standup"},
		{"09:00 UTC tomorrow standup", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), "", "standup"},
		{"tomorrow 18:30 America/New_York call", time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC), "", "call"},
		{"2026-12-01 09:00 Asia/Tokyo launch", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "", "launch"},
		{"every day at 09:00 UTC water", time.Time{}, "UTC", "water"},
		{"every monday at 10:00 America/New_York sync", time.Time{}, "America/New_York", "sync"},
		{"09:00 standup", time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), "", "standup"},           // the chat's zone
		{"09:00 Q4/Q1 review", time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), "", "Q4/Q1 review"}, // not a zone
		{"in 2 hours UTC sync", now.Add(2 * time.Hour), "", "UTC sync"},                           // a duration has no zone
	} {
		got, text, err := ParseWhen(c.in, now, berlin)
		if err != nil {
			t.Errorf("ParseWhen(%q): %v", c.in, err)
			continue
		}
		if !got.At.Equal(c.at) || got.TZ != c.tz || text != c.text {
			t.Errorf("ParseWhen(%q) = at %v tz %q text %q; want at %v tz %q text %q", c.in, got.At, got.TZ, text, c.at, c.tz, c.text)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"09:00 CET standup", `"CET": name the zone as UTC or Area/City`},
		{"every day at 09:00 est water", `"est": name the zone`},
		{"09:00 Europe/Nowhere standup", `"Europe/Nowhere" is not a time zone`},
	} {
		_, _, err := ParseWhen(c.in, now, berlin)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseWhen(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}
