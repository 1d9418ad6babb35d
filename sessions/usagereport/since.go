package usagereport

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSince reads a report's start as operators write it: a span back
// from now ("7d", "12h", "2w"), a UTC day ("2026-11-01", its midnight UTC,
// as day buckets are UTC days) or an RFC 3339 time. "" is the zero time
// (no bound). The error says which forms are accepted.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if n := len(s); n >= 2 {
		unit := map[byte]time.Duration{'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[n-1]]
		if v, err := strconv.Atoi(s[:n-1]); err == nil && unit > 0 && v > 0 && v <= 100*366 {
			if unit == time.Hour {
				return now.Add(-time.Duration(v) * time.Hour), nil
			}
			return now.AddDate(0, 0, -v*int(unit/(24*time.Hour))), nil
		}
	}
	return time.Time{}, fmt.Errorf("since %q: want a span back from now (7d, 12h, 2w), a UTC day (2026-11-01) or an RFC 3339 time", s)
}
