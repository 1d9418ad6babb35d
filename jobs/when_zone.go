package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
)

// A time of day may name its zone right after it ("09:00 UTC", "every
// day at 09:00 Europe/Berlin", "tomorrow 18:30 America/New_York"): read
// as the room's zone with the zone left in the job's text, "09:00 UTC"
// fired at 09:00 in Berlin and said "UTC standup". A zone Go knows
// (UTC, GMT, Z or an Area/City name) is honoured: the time is read in it
// and a recurring job keeps it. An abbreviation (CET, EST, PST, ...) is
// refused with what to write: several zones share one and most are not
// zone names (EST is a fixed offset that never observes summer time).

// zoneAbbrevs are the abbreviations refused after a time of day.
var zoneAbbrevs = map[string]bool{
	"cet": true, "cest": true, "eet": true, "eest": true, "wet": true, "west": true, "bst": true, "ist": true,
	"msk": true, "pst": true, "pdt": true, "mst": true, "mdt": true, "cst": true, "cdt": true, "est": true,
	"edt": true, "akst": true, "akdt": true, "hst": true, "jst": true, "kst": true, "aest": true, "aedt": true,
	"acst": true, "acdt": true, "awst": true, "nzst": true, "nzdt": true, "sgt": true, "hkt": true,
}

// zoneAreas are the areas of the IANA zone names ("Europe/Berlin"): a word
// after the time that starts with one names a zone ("Q4/Q1" does not).
var zoneAreas = map[string]bool{
	"Africa": true, "America": true, "Antarctica": true, "Arctic": true, "Asia": true, "Atlantic": true,
	"Australia": true, "Europe": true, "Indian": true, "Pacific": true, "Etc": true,
}

// zoneWord reads w as a zone named after a time of day: ok with the zone
// for one ParseWhen honours; an error for an abbreviation it refuses;
// neither when w is not a zone (the job's text begins).
func zoneWord(w string) (loc *time.Location, ok bool, err error) {
	lw := strings.ToLower(w)
	switch {
	case lw == "utc" || lw == "gmt" || lw == "z":
		return time.UTC, true, nil
	case zoneAbbrevs[lw]:
		return nil, false, fmt.Errorf("%q: name the zone as UTC or Area/City (e.g. Europe/Berlin, America/New_York), "+
			"or leave it out to use this chat's zone", w)
	case zoneAreas[strings.SplitN(w, "/", 2)[0]] && strings.Contains(w, "/"):
		loc, err := time.LoadLocation(w)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a time zone: name it as Area/City (e.g. Europe/Berlin) or UTC", w)
		}
		return loc, true, nil
	}
	return nil, false, nil
}

// clockForm reports whether s starts with a form that takes a time of day
// (not "in ...", "cron ..." or "@..."), after which a zone may be named.
func clockForm(s string) bool {
	w, _ := word(s)
	lw := strings.ToLower(w)
	return lw != "" && lw != "in" && lw != "cron" && !strings.HasPrefix(lw, "@")
}

// withZone parses s as parseWhen does; when the word after the schedule
// names a zone (zoneWord), s is read again without it, in that zone.
func withZone(s string, now time.Time, loc *time.Location) (sessions.JobSchedule, string, error) {
	sched, rest, err := parseWhen(s, now.In(loc), loc)
	if err != nil || !clockForm(s) {
		return sched, rest, err
	}
	w, after := word(rest)
	zone, ok, err := zoneWord(w)
	if err != nil {
		return sessions.JobSchedule{}, "", err
	}
	if !ok {
		return sched, rest, nil
	}
	return parseWhen(s[:len(s)-len(rest)]+after, now.In(zone), zone)
}
