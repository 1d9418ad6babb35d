package limits

import (
	"testing"
	"time"
)

// Budget days and months tile time in every zone and reset time, DST
// days included (a reset time skipped or repeated by the change, zones
// that change at midnight): each instant is in exactly one window — its
// window holds it, and the next window starts where it ends — so no
// charge is counted in two days or in none.
func TestWindowsTileAcrossDST(t *testing.T) {
	for _, zone := range []string{"Europe/Berlin", "America/Santiago", "America/Havana", "Australia/Lord_Howe", "Asia/Beirut"} {
		for _, reset := range []string{"00:00", "00:30", "02:30", "04:00", "23:30"} {
			p, err := compile(Config{Timezone: zone, ResetAt: reset}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct {
				name string
				f    func(time.Time) (time.Time, time.Time)
			}{{"day", p.dayWindow}, {"month", p.monthWindow}} {
				now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				s, e := w.f(now)
				for now.Year() < 2027 {
					if now.Before(s) || !now.Before(e) {
						t.Fatalf("%s %s %s: %s not in its window %s .. %s", zone, reset, w.name, now, s, e)
					}
					if h := e.Sub(s).Hours(); w.name == "day" && (h < 22 || h > 26) {
						t.Fatalf("%s %s: day %s .. %s is %.1f h", zone, reset, s, e, h)
					}
					now = now.Add(15 * time.Minute)
					if !now.Before(e) {
						ns, ne := w.f(now)
						if !ns.Equal(e) {
							t.Fatalf("%s %s %s: window after %s .. %s starts at %s", zone, reset, w.name, s, e, ns)
						}
						s, e = ns, ne
					}
				}
			}
		}
	}
}
