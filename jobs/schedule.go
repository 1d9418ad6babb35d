package jobs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/gateway/gateway/sessions"
)

// Location loads the IANA time zone name ("" and "UTC" are UTC, "Local"
// the host's), with an error that names it.
func Location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (use an IANA name such as Europe/Berlin)", name)
	}
	return loc, nil
}

// ParseCron parses a standard five-field cron expression (minute hour
// day-of-month month day-of-week) or a descriptor (@hourly, @daily,
// @weekly, @monthly, @yearly, @every 90m), with an error that names what
// is wrong. A time zone belongs in JobSchedule.TZ, not in the expression.
func ParseCron(expr string) (cron.Schedule, error) {
	e := strings.TrimSpace(expr)
	if e == "" {
		return nil, errors.New("empty cron expression")
	}
	if strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ=") {
		return nil, fmt.Errorf("cron expression %q: give the time zone apart, not as %s", expr, e[:strings.IndexByte(e, '=')])
	}
	s, err := cron.ParseStandard(e)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w (want minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\", or @daily)", expr, err)
	}
	if d, ok := s.(cron.ConstantDelaySchedule); ok && d.Delay < time.Minute {
		return nil, fmt.Errorf("cron expression %q: repeats more often than once a minute", expr)
	}
	return s, nil
}

// CheckSchedule reports what is wrong with s: neither or both of a time
// and a cron expression, a cron expression that does not parse or never
// fires, an unknown time zone.
func CheckSchedule(s sessions.JobSchedule) error {
	if s.At.IsZero() == (s.Cron == "") {
		return errors.New("a schedule needs exactly one of a time and a cron expression")
	}
	loc, err := Location(s.TZ)
	if err != nil {
		return err
	}
	if s.Cron == "" {
		return nil
	}
	c, err := ParseCron(s.Cron)
	if err != nil {
		return err
	}
	if c.Next(time.Now().In(loc)).IsZero() {
		return fmt.Errorf("cron expression %q never fires", s.Cron)
	}
	return nil
}

// Next returns the occurrence of s strictly after t (zero when there is
// none: a one-shot job's time has passed, or a cron expression that
// fires no more). Cron fields are read as wall-clock time in s.TZ, so "0
// 9 * * *" stays at 09:00 across DST changes; a time the change skips
// fires at the first time that exists after it, and one it repeats fires
// once (nextWall) — except for an expression that fires in every hour,
// which runs on real time (once in each real hour, both runs of a
// repeated hour included).
func Next(s sessions.JobSchedule, t time.Time) (time.Time, error) {
	if s.Cron == "" {
		if s.At.After(t) {
			return s.At, nil
		}
		return time.Time{}, nil
	}
	loc, err := Location(s.TZ)
	if err != nil {
		return time.Time{}, err
	}
	c, err := ParseCron(s.Cron)
	if err != nil {
		return time.Time{}, err
	}
	if _, ok := c.(cron.ConstantDelaySchedule); ok { // @every: elapsed time, no wall clock
		return c.Next(t).UTC(), nil
	}
	if everyHour(c) {
		// Fires in every hour: real time, as cron runs wildcard-hour
		// jobs. Both runs of a repeated hour fire; a skipped hour has no
		// run moved to the next one (which has its own).
		return c.Next(t.In(loc)).UTC(), nil
	}
	return nextWall(c, t, loc).UTC(), nil
}

// everyHour reports whether c's hour field admits all 24 hours ("0 * * *
// *", "every hour", "*/15 * * * *").
func everyHour(c cron.Schedule) bool {
	const all = 1<<24 - 1
	spec, ok := c.(*cron.SpecSchedule)
	return ok && spec.Hour&all == all
}

// nextWall returns the first instant after t whose wall clock in loc is
// an occurrence of c. robfig/cron steps through instants, so it skips a
// time a DST change skips and fires twice at a time the change repeats;
// here c is run on the wall clock (as if loc had no DST) and each wall
// time it gives is placed in loc: a repeated one at its first instant, a
// skipped one at the first wall time after it that exists (02:30 on a
// 02:00→03:00 day fires at 03:00).
func nextWall(c cron.Schedule, t time.Time, loc *time.Location) time.Time {
	lt := t.In(loc)
	w := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), lt.Minute(), lt.Second(), lt.Nanosecond(), time.UTC)
	for range 1000 {
		wn := c.Next(w)
		if wn.IsZero() {
			return wn
		}
		if x, ok := placeWall(wn, loc, t); ok {
			return x
		}
		w = wn
	}
	return time.Time{}
}

// placeWall returns the earliest instant after t whose wall clock in loc
// reads wn's (wn's fields, its zone ignored), or, when loc skips that
// wall time, the instant of the first wall time after it that exists.
func placeWall(wn time.Time, loc *time.Location, t time.Time) (time.Time, bool) {
	at := func(w time.Time) time.Time {
		return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc)
	}
	base := at(wn)
	var best time.Time
	for _, d := range []time.Duration{-time.Hour, -30 * time.Minute, 0, 30 * time.Minute, time.Hour} {
		x := base.Add(d)
		if sameWall(x.In(loc), wn) && x.After(t) && (best.IsZero() || x.Before(best)) {
			best = x
		}
	}
	if !best.IsZero() {
		return best, true
	}
	if sameWall(base.In(loc), wn) {
		return time.Time{}, false // it exists, but not after t
	}
	for m := 1; m <= 180; m++ { // skipped by a DST change
		w := wn.Add(time.Duration(m) * time.Minute)
		if x := at(w); sameWall(x.In(loc), w) {
			return x, x.After(t)
		}
	}
	return time.Time{}, false
}

// sameWall reports whether a and b read the same wall clock (zones aside).
func sameWall(a, b time.Time) bool {
	return a.Year() == b.Year() && a.YearDay() == b.YearDay() && a.Hour() == b.Hour() &&
		a.Minute() == b.Minute() && a.Second() == b.Second()
}

// maxCatchUp bounds how many missed occurrences Latest walks (a
// per-minute job down for ten weeks).
const maxCatchUp = 100_000

// Latest returns the last occurrence of s at or before now, starting
// from due (itself an occurrence at or before now), and how many
// occurrences it passed over.
func Latest(s sessions.JobSchedule, due, now time.Time) (time.Time, int, error) {
	if s.Cron == "" {
		return due, 0, nil
	}
	last, skipped := due, 0
	for range maxCatchUp {
		n, err := Next(s, last)
		if err != nil {
			return time.Time{}, 0, err
		}
		if n.IsZero() || n.After(now) {
			break
		}
		last, skipped = n, skipped+1
	}
	return last, skipped, nil
}
