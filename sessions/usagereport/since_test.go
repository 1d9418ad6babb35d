package usagereport

import (
	"strings"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 25, 17, 30, 0, 0, time.UTC)
	good := []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"7d", time.Date(2026, 11, 18, 17, 30, 0, 0, time.UTC)},
		{"12h", time.Date(2026, 11, 25, 5, 30, 0, 0, time.UTC)},
		{"2w", time.Date(2026, 11, 11, 17, 30, 0, 0, time.UTC)},
		{" 1d ", time.Date(2026, 11, 24, 17, 30, 0, 0, time.UTC)},
		{"2026-11-01", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-11-01T10:00:00+02:00", time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)},
	}
	for _, c := range good {
		got, err := ParseSince(c.in, now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"7", "d", "0d", "-3d", "7m", "7 days", "2026-13-01", "yesterday", "99999999d", "1.5d"} {
		_, err := ParseSince(in, now)
		if err == nil || !strings.Contains(err.Error(), "want a span back from now") {
			t.Errorf("ParseSince(%q): err %v, want the accepted forms named", in, err)
		}
	}
}
