package limits

import "time"

// Budget windows. A day starts at resetAt in the configured time zone and
// ends at the next day's resetAt (23 or 25 hours on a DST change); a month
// starts on the 1st at resetAt. A reset time that does not exist on a day
// (skipped by a DST change) is the same wall time moved forward, as Go's
// time.Date normalises it.

// dayWindow returns the budget day holding now.
func (p *policy) dayWindow(now time.Time) (start, end time.Time) {
	t := now.In(p.loc)
	start = time.Date(t.Year(), t.Month(), t.Day(), p.resetH, p.resetM, 0, 0, p.loc)
	if start.After(now) {
		start = time.Date(t.Year(), t.Month(), t.Day()-1, p.resetH, p.resetM, 0, 0, p.loc)
	}
	s := start.In(p.loc)
	end = time.Date(s.Year(), s.Month(), s.Day()+1, p.resetH, p.resetM, 0, 0, p.loc)
	return start, end
}

// monthWindow returns the budget month holding now.
func (p *policy) monthWindow(now time.Time) (start, end time.Time) {
	t := now.In(p.loc)
	start = time.Date(t.Year(), t.Month(), 1, p.resetH, p.resetM, 0, 0, p.loc)
	if start.After(now) {
		start = time.Date(t.Year(), t.Month()-1, 1, p.resetH, p.resetM, 0, 0, p.loc)
	}
	s := start.In(p.loc)
	end = time.Date(s.Year(), s.Month()+1, 1, p.resetH, p.resetM, 0, 0, p.loc)
	return start, end
}
