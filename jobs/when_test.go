package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

func TestParseWhen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 16, 30, 0, 0, berlin) // a Sunday
	at := func(y int, mo time.Month, d, h, m, s int) sessions.JobSchedule {
		return sessions.JobSchedule{At: time.Date(y, mo, d, h, m, s, 0, berlin).UTC()}
	}
	cron := func(e string) sessions.JobSchedule { return sessions.JobSchedule{Cron: e, TZ: "Europe/Berlin"} }
	for _, c := range []struct {
		in   string
		want sessions.JobSchedule
		text string
	}{
		{"in 2 hours stand-up", at(2026, 11, 29, 18, 30, 0), "stand-up"},
		{"in 2 s ping", at(2026, 11, 29, 16, 30, 2), "ping"},
		{"IN 90s  ping  pong ", at(2026, 11, 29, 16, 31, 30), "ping  pong"},
		{"in 1h30m tea", at(2026, 11, 29, 18, 0, 0), "tea"},
		{"tomorrow 09:00 remind the room", at(2026, 11, 30, 9, 0, 0), "remind the room"},
		{"tomorrow at 9:05 x", at(2026, 11, 30, 9, 5, 0), "x"},
		{"today 18:00 x", at(2026, 11, 29, 18, 0, 0), "x"},
		{"09:00 x", at(2026, 11, 30, 9, 0, 0), "x"},
		{"at 17:00 x", at(2026, 11, 29, 17, 0, 0), "x"},
		{"2026-12-24 18:00 presents", at(2026, 12, 24, 18, 0, 0), "presents"},
		{"2026-12-24T18:00 presents", at(2026, 12, 24, 18, 0, 0), "presents"},
		{"2026-12-24T18:00:00Z presents", sessions.JobSchedule{At: time.Date(2026, 12, 24, 18, 0, 0, 0, time.UTC)}, "presents"},
		{"every day at 09:00 water", cron("0 9 * * *"), "water"},
		{"every weekday 8:30 stand-up", cron("30 8 * * 1-5"), "stand-up"},
		{"every Monday at 10:00 plan", cron("0 10 * * 1"), "plan"},
		{"every hour stretch", cron("0 * * * *"), "stretch"},
		{"cron 0 9 * * 1-5 stand-up now", cron("0 9 * * 1-5"), "stand-up now"},
		{"@daily backup", cron("@daily"), "backup"},
		{"@every 2h drink", cron("@every 2h"), "drink"},
	} {
		got, text, err := ParseWhen(c.in, now, berlin)
		if err != nil {
			t.Errorf("ParseWhen(%q): %v", c.in, err)
			continue
		}
		if !got.At.Equal(c.want.At) || got.Cron != c.want.Cron || got.TZ != c.want.TZ || text != c.text {
			t.Errorf("ParseWhen(%q) = %+v, %q; want %+v, %q", c.in, got, text, c.want, c.text)
		}
	}
}

func TestParseWhenErrorsNameTheProblem(t *testing.T) {
	now := time.Date(2026, 11, 29, 16, 30, 0, 0, time.UTC)
	for _, c := range []struct{ in, want string }{
		{"", "no time given"},
		{"soon do it", `cannot read the time "soon"`},
		{"in 2 fortnights x", `unknown unit "fortnights"`},
		{"in 0 minutes x", "out of range"},
		{"in 400 days x", "out of range"},
		{"in lots x", "not a duration"},
		{"tomorrow 25:00 x", "hour must be 0-23"},
		{"tomorrow noon x", `"noon" is not a time of day`},
		{"2020-01-01 09:00 x", "is in the past"},
		{"2026-13-01 09:00 x", `"2026-13-01" is not a date`},
		{"cron 0 9 *", "cron needs five fields"},
		{"cron 0 9 * * mon-fry x", `cron expression "0 9 * * mon-fry"`},
		{"cron 61 9 * * * x", "above maximum (59)"},
		{"cron 0 0 30 2 * x", "never fires"},
		{"@every 10s x", "more often than once a minute"},
		{"@fortnightly x", "unrecognized descriptor"},
		{"every fortnight at 09:00 x", `"fortnight": write every day`},
		{"in 2 hours", "no text after the time"},
	} {
		_, _, err := ParseWhen(c.in, now, time.UTC)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseWhen(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestCheckScheduleTimeZone(t *testing.T) {
	err := CheckSchedule(sessions.JobSchedule{Cron: "@daily", TZ: "Mars/Olympus"})
	if err == nil || !strings.Contains(err.Error(), `unknown time zone "Mars/Olympus"`) {
		t.Errorf("CheckSchedule with a bad zone: %v", err)
	}
}

// TestParseWhenNaturalForms: what people write beyond the documented
// forms is read right or refused, never stored at another time with the
// rest of the time in the text: a 12-hour clock is refused (read as
// 24-hour, "9:00 pm" fired at 09:00), durations in pieces add up ("in 1
// hour 30 minutes" fired after an hour), a day after the time counts
// ("09:00 tomorrow" fired today), a duration with a time is refused.
func TestParseWhenNaturalForms(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		at   time.Time
		text string
	}{
		{"in 1 hour 30 minutes call Bob", now.Add(90 * time.Minute), "call Bob"},
		{"in 2 days and 3 hours renew", now.Add(51 * time.Hour), "renew"},
		{"in 2h 30m tea", now.Add(150 * time.Minute), "tea"},
		{"in 2 hours 3 people arrive", now.Add(2 * time.Hour), "3 people arrive"},
		{"09:00 tomorrow stand-up", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), "stand-up"},
		{"at 9:00 tomorrow stand-up", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), "stand-up"},
		{"at 18:00 today dinner", time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC), "dinner"},
	} {
		got, text, err := ParseWhen(c.in, now, time.UTC)
		if err != nil || !got.At.Equal(c.at) || text != c.text {
			t.Errorf("ParseWhen(%q) = %v, %q, %v; want %v, %q", c.in, got.At, text, err, c.at, c.text)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"9:00 pm call mom", "24-hour clock"},
		{"tomorrow 09:00 PM call mom", "24-hour clock"},
		{"tomorrow at 9:30 p.m. call mom", "24-hour clock"},
		{"every day at 7:00 am water", "24-hour clock"},
		{"2026-12-24 6:00 pm presents", "24-hour clock"},
		{"9pm call mom", `"9pm": write the time of day on the 24-hour clock`},
		{"tomorrow 9:30am call mom", `"9:30am": write the time of day on the 24-hour clock`},
		{"in 2 days at 09:00 dentist", "not both"},
		{"in 1 hour 09:00 dentist", "not both"},
		{"at 07:00 today x", "is in the past"},
		{"in 300 days 100 days x", "out of range"},
	} {
		_, _, err := ParseWhen(c.in, now, time.UTC)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseWhen(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}
