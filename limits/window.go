package limits

import "time"

// Budget windows. A day starts at resetAt in the configured time zone and
// ends at the next day's resetAt (23 or 25 hours on a DST change); a month
// starts on the 1st at resetAt. A reset time that does not exist on a day
// (skipped by a DST change) is that wall time as Go's time.Date normalises
// it, which may be an instant of the day before (America/Santiago's 00:00
// on its spring day is 23:00 the evening before): the windows are the
// spans between consecutive reset instants, so they still tile time.

// dayWindow returns the budget day holding now.
func (p *policy) dayWindow(now time.Time) (start, end time.Time) {
	t := now.In(p.loc)
	return span(now, func(i int) time.Time {
		return time.Date(t.Year(), t.Month(), t.Day()+i, p.resetH, p.resetM, 0, 0, p.loc)
	})
}

// monthWindow returns the budget month holding now.
func (p *policy) monthWindow(now time.Time) (start, end time.Time) {
	t := now.In(p.loc)
	return span(now, func(i int) time.Time {
		return time.Date(t.Year(), t.Month()+time.Month(i), 1, p.resetH, p.resetM, 0, 0, p.loc)
	})
}

// span returns the reset instants at(i) <= now < at(i+1); at is
// increasing in i and at(0) is within a day or a month of now.
func span(now time.Time, at func(int) time.Time) (start, end time.Time) {
	i := 0
	for at(i).After(now) {
		i--
	}
	for !at(i + 1).After(now) {
		i++
	}
	return at(i), at(i + 1)
}
