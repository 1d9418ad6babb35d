package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gateway/gateway/sessions"
)

// WhenHelp lists the forms ParseWhen reads, for error messages and /help.
const WhenHelp = `"in 2 hours", "in 90s", "tomorrow 09:00", "today 18:30", "09:00", "2026-12-01 09:00", ` +
	`"every day at 09:00", "every weekday at 09:00", "every monday at 10:00", "cron 0 9 * * 1-5" or "@daily"`

// ParseWhen reads a schedule at the start of s and returns it with the
// rest of s (the job's text, spaces trimmed). Times of day are wall-clock
// times in loc (the room's or agent's zone), which a recurring schedule
// keeps (TZ), unless the time names its zone ("09:00 UTC", "09:00
// Europe/Berlin"; when_zone.go); now is the present. A time of day alone
// is its next occurrence. An error names what is wrong: an unknown form, a number or
// time out of range, a time in the past, a cron expression that does not
// parse, no text.
func ParseWhen(s string, now time.Time, loc *time.Location) (sessions.JobSchedule, string, error) {
	sched, rest, err := withZone(s, now, loc) // when_zone.go
	if err != nil {
		return sessions.JobSchedule{}, "", err
	}
	if !sched.At.IsZero() {
		if !sched.At.After(now) {
			return sessions.JobSchedule{}, "", fmt.Errorf("%s is in the past", sched.At.In(loc).Format("2006-01-02 15:04 MST"))
		}
		sched.At = sched.At.UTC()
	} else if err := CheckSchedule(sched); err != nil {
		return sessions.JobSchedule{}, "", err
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return sessions.JobSchedule{}, "", errors.New("no text after the time: what should arrive then?")
	}
	return sched, rest, nil
}

// word cuts the first space-separated word off s.
func word(s string) (w, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

func parseWhen(s string, now time.Time, loc *time.Location) (sessions.JobSchedule, string, error) {
	w, rest := word(s)
	lw := strings.ToLower(w)
	tzName := loc.String()
	switch {
	case lw == "":
		return sessions.JobSchedule{}, "", fmt.Errorf("no time given: write %s", WhenHelp)
	case lw == "in":
		d, rest, err := parseIn(rest)
		if err != nil {
			return sessions.JobSchedule{}, "", err
		}
		if next, after := word(rest); strings.EqualFold(next, "at") || isClock(next) {
			if strings.EqualFold(next, "at") {
				next, _ = word(after)
			}
			return sessions.JobSchedule{}, "", fmt.Errorf("%q then %q: give a duration (in 2 hours) or a day and a time (tomorrow 09:00, 2026-12-01 09:00), not both",
				strings.TrimSpace(s[:len(s)-len(rest)]), next)
		}
		return sessions.JobSchedule{At: now.Add(d)}, rest, nil
	case lw == "today" || lw == "tomorrow":
		h, m, rest, err := clockAfterAt(rest)
		if err != nil {
			return sessions.JobSchedule{}, "", fmt.Errorf("%s: %w", lw, err)
		}
		day := now
		if lw == "tomorrow" {
			day = now.AddDate(0, 0, 1)
		}
		return sessions.JobSchedule{At: time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc)}, rest, nil
	case lw == "at" || isClock(lw):
		if lw == "at" {
			w, rest = word(rest)
		}
		h, m, err := parseClock(w)
		if err == nil {
			err = noMeridiem(w, rest)
		}
		if err != nil {
			return sessions.JobSchedule{}, "", err
		}
		switch day, after := word(rest); strings.ToLower(day) { // "09:00 tomorrow", "at 9:00 today"
		case "today":
			return sessions.JobSchedule{At: time.Date(now.Year(), now.Month(), now.Day(), h, m, 0, 0, loc)}, after, nil
		case "tomorrow":
			return sessions.JobSchedule{At: time.Date(now.Year(), now.Month(), now.Day()+1, h, m, 0, 0, loc)}, after, nil
		}
		at := time.Date(now.Year(), now.Month(), now.Day(), h, m, 0, 0, loc)
		if !at.After(now) {
			at = time.Date(now.Year(), now.Month(), now.Day()+1, h, m, 0, 0, loc)
		}
		return sessions.JobSchedule{At: at}, rest, nil
	case isDate(lw):
		return parseDate(w, rest, loc)
	case lw == "cron":
		f := strings.Fields(rest)
		if len(f) < 5 {
			return sessions.JobSchedule{}, "", fmt.Errorf("cron needs five fields (minute hour day-of-month month day-of-week), got %d", len(f))
		}
		expr := strings.Join(f[:5], " ")
		_, after := cutWords(rest, 5)
		return sessions.JobSchedule{Cron: expr, TZ: tzName}, after, nil
	case strings.HasPrefix(lw, "@"):
		expr := lw
		if lw == "@every" {
			var d string
			d, rest = word(rest)
			expr += " " + d
		}
		return sessions.JobSchedule{Cron: expr, TZ: tzName}, rest, nil
	case lw == "every":
		expr, rest, err := parseEvery(rest)
		if err != nil {
			return sessions.JobSchedule{}, "", fmt.Errorf("every: %w", err)
		}
		return sessions.JobSchedule{Cron: expr, TZ: tzName}, rest, nil
	}
	if twelveHour(lw) {
		return sessions.JobSchedule{}, "", fmt.Errorf("%q: write the time of day on the 24-hour clock (e.g. 21:00)", w)
	}
	return sessions.JobSchedule{}, "", fmt.Errorf("cannot read the time %q: write %s", w, WhenHelp)
}

// cutWords cuts n words off s.
func cutWords(s string, n int) (words []string, rest string) {
	rest = s
	for range n {
		var w string
		w, rest = word(rest)
		words = append(words, w)
	}
	return words, rest
}

// units are the duration words of "in N unit".
var units = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// maxIn bounds "in ..." (a year).
const maxIn = 366 * 24 * time.Hour

// parseIn reads "2 hours", "2h", "90s", "1h30m" at the start of s, and
// the further pieces that follow it ("1 hour 30 minutes", "2 days and 3
// hours"), which add up: a piece left unread would become the job's text
// and the job would fire early.
func parseIn(s string) (time.Duration, string, error) {
	d, rest, err := inPiece(s)
	if err != nil {
		return 0, "", err
	}
	for {
		more := rest
		if w, after := word(rest); strings.EqualFold(w, "and") {
			more = after
		}
		if w, _ := word(more); w == "" || w[0] < '0' || w[0] > '9' {
			break
		}
		e, after, err := inPiece(more)
		if err != nil {
			break // "in 2 hours 3 people arrive": the rest is the text
		}
		d, rest = d+e, after
	}
	if d > maxIn {
		return 0, "", fmt.Errorf("in %s: out of range (more than zero, at most a year)", strings.TrimSpace(s[:len(s)-len(rest)]))
	}
	return d, rest, nil
}

// inPiece reads one duration at the start of s: "2 hours", "2h", "90s",
// "1h30m".
func inPiece(s string) (time.Duration, string, error) {
	w, rest := word(s)
	lw := strings.ToLower(w)
	if lw == "" {
		return 0, "", errors.New(`"in" needs a duration, e.g. "in 2 hours"`)
	}
	var d time.Duration
	if n, err := strconv.Atoi(lw); err == nil {
		u, after := word(rest)
		unit, ok := units[strings.ToLower(u)]
		if !ok {
			return 0, "", fmt.Errorf("in %s: unknown unit %q (seconds, minutes, hours, days or weeks)", w, u)
		}
		if n <= 0 || time.Duration(n) > maxIn/unit {
			return 0, "", fmt.Errorf("in %s %s: out of range (more than zero, at most a year)", w, u)
		}
		d, rest = time.Duration(n)*unit, after
	} else {
		i := strings.IndexFunc(lw, func(r rune) bool { return !unicode.IsDigit(r) })
		if i > 0 {
			if unit, ok := units[lw[i:]]; ok {
				n, _ := strconv.Atoi(lw[:i])
				if n <= 0 || time.Duration(n) > maxIn/unit {
					return 0, "", fmt.Errorf("in %s: out of range (more than zero, at most a year)", w)
				}
				return time.Duration(n) * unit, rest, nil
			}
		}
		pd, err := time.ParseDuration(lw)
		if err != nil {
			return 0, "", fmt.Errorf("in %s: not a duration (e.g. 90s, 2h, 1h30m, \"2 hours\")", w)
		}
		if pd <= 0 || pd > maxIn {
			return 0, "", fmt.Errorf("in %s: out of range (more than zero, at most a year)", w)
		}
		d = pd
	}
	return d, rest, nil
}

func isClock(w string) bool {
	h, m, ok := strings.Cut(w, ":")
	return ok && len(h) >= 1 && len(h) <= 2 && len(m) == 2 && allDigits(h) && allDigits(m)
}

func allDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// parseClock reads "9:05" or "09:05".
func parseClock(w string) (h, m int, err error) {
	if twelveHour(strings.ToLower(w)) {
		return 0, 0, fmt.Errorf("%q: write the time of day on the 24-hour clock (e.g. 21:00)", w)
	}
	if !isClock(w) {
		return 0, 0, fmt.Errorf("%q is not a time of day (HH:MM, e.g. 09:00)", w)
	}
	hs, ms, _ := strings.Cut(w, ":")
	h, _ = strconv.Atoi(hs)
	m, _ = strconv.Atoi(ms)
	if h > 23 || m > 59 {
		return 0, 0, fmt.Errorf("%q: hour must be 0-23 and minute 0-59", w)
	}
	return h, m, nil
}

// clockAfterAt reads "[at] HH:MM" at the start of s.
func clockAfterAt(s string) (h, m int, rest string, err error) {
	w, rest := word(s)
	if strings.EqualFold(w, "at") {
		w, rest = word(rest)
	}
	h, m, err = parseClock(w)
	if err == nil {
		err = noMeridiem(w, rest)
	}
	return h, m, rest, err
}

// twelveHour reports a time of day on the 12-hour clock, its am or pm
// glued on: "9pm", "9:30am", "9:30p.m." (w lower-case).
func twelveHour(w string) bool {
	w = strings.ReplaceAll(w, ".", "")
	for _, suf := range []string{"am", "pm"} {
		if c, ok := strings.CutSuffix(w, suf); ok && (isClock(c) || (allDigits(c) && len(c) <= 2)) {
			return true
		}
	}
	return false
}

// noMeridiem refuses a time of day clock followed by "am" or "pm" in
// rest: read as 24-hour, "9:00 pm" would fire at 09:00 with "pm" in
// the text.
func noMeridiem(clock, rest string) error {
	next, _ := word(rest)
	switch strings.ToLower(strings.ReplaceAll(next, ".", "")) {
	case "am", "pm":
		return fmt.Errorf("%q: write the time of day on the 24-hour clock (e.g. 21:00)", clock+" "+next)
	}
	return nil
}

func isDate(w string) bool {
	return len(w) >= 10 && allDigits(w[:4]) && w[4] == '-' && allDigits(w[5:7]) && w[7] == '-' && allDigits(w[8:10])
}

// parseDate reads "2026-12-01 09:00", "2026-12-01T09:00" or RFC 3339.
func parseDate(w, rest string, loc *time.Location) (sessions.JobSchedule, string, error) {
	if t, err := time.Parse(time.RFC3339, w); err == nil {
		return sessions.JobSchedule{At: t}, rest, nil
	}
	if d, clock, ok := strings.Cut(w, "T"); ok {
		w, rest = d, clock+rest
		rest = " " + rest
	}
	day, err := time.ParseInLocation("2006-01-02", w, loc)
	if err != nil {
		return sessions.JobSchedule{}, "", fmt.Errorf("%q is not a date (YYYY-MM-DD)", w)
	}
	h, m, rest, err := clockAfterAt(rest)
	if err != nil {
		return sessions.JobSchedule{}, "", fmt.Errorf("%s: %w", w, err)
	}
	return sessions.JobSchedule{At: time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc)}, rest, nil
}

var weekdays = map[string]string{
	"sunday": "0", "monday": "1", "tuesday": "2", "wednesday": "3", "thursday": "4", "friday": "5", "saturday": "6",
	"day": "*", "weekday": "1-5",
}

// parseEvery reads "day at 09:00", "weekday 09:00", "monday at 10:00" or
// "hour" and returns the cron expression.
func parseEvery(s string) (string, string, error) {
	w, rest := word(s)
	lw := strings.ToLower(w)
	if lw == "hour" {
		return "0 * * * *", rest, nil
	}
	dow, ok := weekdays[strings.TrimSuffix(lw, "s")]
	if !ok {
		return "", "", fmt.Errorf("%q: write every day, weekday, monday…sunday or hour", w)
	}
	h, m, rest, err := clockAfterAt(rest)
	if err != nil {
		return "", "", err
	}
	return fmt.Sprintf("%d %d * * %s", m, h, dow), rest, nil
}
