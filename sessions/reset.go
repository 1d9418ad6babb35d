package sessions

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // IANA zones must resolve on hosts without /usr/share/zoneinfo

	"github.com/gateway/gateway/routing"
)

// Reset policy defaults (SPEC §3.6). A config that says nothing never resets:
// a silent 4 am rollover surprised users of the reference system.
const (
	defaultResetMode   = ResetOff
	defaultResetAtHour = 4
	defaultTimezone    = "Local"
)

// defaultResetTriggers are the triggers used when ResetTriggers is nil.
var defaultResetTriggers = []string{"/new", "/reset"}

// Reset reasons returned by Evaluate.
const (
	ReasonDaily = "daily"
	ReasonIdle  = "idle"
)

// WithDefaults fills what the configuration leaves unset: the global policy
// gets mode off, atHour 4, idleMinutes 0 and timezone Local, and a nil
// trigger list becomes /new and /reset. Per-type and per-channel policies
// are left as written: their unset fields inherit at Resolve time.
func (c ResetConfig) WithDefaults() ResetConfig {
	c.Reset = c.Reset.fill(ResetPolicy{})
	if c.ResetTriggers == nil {
		c.ResetTriggers = append([]string(nil), defaultResetTriggers...)
	}
	return c
}

// fill returns p with unset fields taken from parent, then from the
// built-in defaults, so every field of the result is set.
func (p ResetPolicy) fill(parent ResetPolicy) ResetPolicy {
	if p.Mode == "" {
		p.Mode = parent.Mode
	}
	if p.Mode == "" {
		p.Mode = defaultResetMode
	}
	if p.AtHour == nil {
		p.AtHour = parent.AtHour
	}
	if p.AtHour == nil {
		h := defaultResetAtHour
		p.AtHour = &h
	}
	if p.IdleMinutes == nil {
		p.IdleMinutes = parent.IdleMinutes
	}
	if p.IdleMinutes == nil {
		z := 0
		p.IdleMinutes = &z
	}
	if p.Timezone == "" {
		p.Timezone = parent.Timezone
	}
	if p.Timezone == "" {
		p.Timezone = defaultTimezone
	}
	return p
}

// Resolve returns the effective policy for a session: resetByChannel[channel]
// replaces everything else; otherwise each field comes from
// resetByType[key.ResetType()], then from reset, then from the defaults.
// Every field of the result is set.
func (c ResetConfig) Resolve(key routing.Key, channel string) ResetPolicy {
	if p, ok := c.byChannel(channel); ok {
		return p.fill(ResetPolicy{})
	}
	p := c.ResetByType[string(key.ResetType())]
	return p.fill(c.Reset.fill(ResetPolicy{}))
}

// byChannel is the resetByChannel policy of channel. The channel name
// matches whatever its case, as a binding's match.channel does: an
// operator who writes "Telegram" means the telegram channel, and a policy
// that never matched was ignored without a word (Validate refuses two
// spellings of one channel).
func (c ResetConfig) byChannel(channel string) (ResetPolicy, bool) {
	if channel == "" {
		return ResetPolicy{}, false
	}
	if p, ok := c.ResetByChannel[channel]; ok {
		return p, true
	}
	for ch, p := range c.ResetByChannel {
		if strings.EqualFold(ch, channel) {
			return p, true
		}
	}
	return ResetPolicy{}, false
}

// Validate reports the first problem of the configuration; the error names
// the offending key (e.g. "session.resetByType.group.idleMinutes: must be > 0").
func (c ResetConfig) Validate() error {
	var errs []error
	check := func(path string, p ResetPolicy) {
		if err := p.validate(path); err != nil {
			errs = append(errs, err)
		}
	}
	check("session.reset", c.Reset)
	for _, t := range sortedKeys(c.ResetByType) {
		path := "session.resetByType." + t
		switch routing.ResetType(t) {
		case routing.ResetDirect, routing.ResetGroup, routing.ResetThread:
		default:
			errs = append(errs, fmt.Errorf("%s: unknown session type (want direct, group or thread)", path))
			continue
		}
		check(path, c.ResetByType[t])
	}
	seen := map[string]string{} // lower-cased channel -> its first spelling
	for _, ch := range sortedKeys(c.ResetByChannel) {
		path := "session.resetByChannel." + ch
		if ch == "" {
			errs = append(errs, fmt.Errorf("%s: empty channel name", path))
			continue
		}
		if first, ok := seen[strings.ToLower(ch)]; ok {
			errs = append(errs, fmt.Errorf("session.resetByChannel.%s: channel %q written twice (%q and %q)",
				strings.ToLower(ch), strings.ToLower(ch), first, ch))
			continue
		}
		seen[strings.ToLower(ch)] = ch
		check(path, c.ResetByChannel[ch])
	}
	// An idle policy needs an idle time once inheritance is applied; name
	// the policy that asked for idle.
	global := c.Reset.fill(ResetPolicy{})
	if global.Mode == ResetIdle && *global.IdleMinutes <= 0 {
		errs = append(errs, errors.New("session.reset.idleMinutes: must be > 0 when mode is idle"))
	}
	for _, t := range sortedKeys(c.ResetByType) {
		p := c.ResetByType[t].fill(global)
		if p.Mode == ResetIdle && *p.IdleMinutes <= 0 && (c.ResetByType[t].Mode == ResetIdle || c.ResetByType[t].IdleMinutes != nil) {
			errs = append(errs, fmt.Errorf("session.resetByType.%s.idleMinutes: must be > 0 when mode is idle", t))
		}
	}
	for _, ch := range sortedKeys(c.ResetByChannel) {
		p := c.ResetByChannel[ch].fill(ResetPolicy{})
		if p.Mode == ResetIdle && *p.IdleMinutes <= 0 {
			errs = append(errs, fmt.Errorf("session.resetByChannel.%s.idleMinutes: must be > 0 when mode is idle", ch))
		}
	}
	for i, tr := range c.ResetTriggers {
		if strings.TrimSpace(tr) == "" || strings.ContainsAny(tr, " \t\r\n") {
			errs = append(errs, fmt.Errorf("session.resetTriggers[%d]: %q must be one non-empty word", i, tr))
		}
	}
	return errors.Join(errs...)
}

func (p ResetPolicy) validate(path string) error {
	var errs []error
	switch p.Mode {
	case "", ResetOff, ResetDaily, ResetIdle:
	default:
		errs = append(errs, fmt.Errorf("%s.mode: %q (want off, daily or idle)", path, p.Mode))
	}
	if p.AtHour != nil && (*p.AtHour < 0 || *p.AtHour > 23) {
		errs = append(errs, fmt.Errorf("%s.atHour: %d (want 0..23)", path, *p.AtHour))
	}
	if p.IdleMinutes != nil && *p.IdleMinutes < 0 {
		errs = append(errs, fmt.Errorf("%s.idleMinutes: %d must be >= 0", path, *p.IdleMinutes))
	}
	if p.Timezone != "" {
		if _, err := loadZone(p.Timezone); err != nil {
			errs = append(errs, fmt.Errorf("%s.timezone: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

func loadZone(name string) (*time.Location, error) {
	switch name {
	case "", "Local", "local":
		return time.Local, nil
	case "UTC", "utc":
		return time.UTC, nil
	}
	if l, ok := zoneCache.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zoneCache.Store(name, l)
	return l, nil
}

// zoneCache keeps loaded time zones: Evaluate runs on every inbound message
// and parsing tzdata each time cost ~10 µs. Zones are immutable.
var zoneCache sync.Map

func sortedKeys(m map[string]ResetPolicy) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Evaluate reports whether the session e of key must be rolled over before
// the message arriving at now is handled, and why ("daily" or "idle"). The
// policy is resolved for the key's channel, falling back to e.LastChannel
// and then e.Channel for keys without one (the main session).
//
// Daily compares sessionStartedAt with the most recent atHour:00 in the
// policy's zone; idle compares lastInteractionAt plus idleMinutes with now.
// updatedAt is never consulted, so writes that are not user input (counter
// flushes, heartbeats) do not keep a session fresh. Mode daily with
// idleMinutes > 0 applies both rules and reports the one that expired first.
// A subagent's session is never stale.
func Evaluate(cfg ResetConfig, key routing.Key, e Entry, now time.Time) (stale bool, reason string) {
	at, reason := Expiry(cfg, key, e, now)
	return !at.IsZero(), reason
}

// Expiry is Evaluate that also tells when the session expired (zero when
// it is fresh): the room history kept before that instant belongs to the
// session the reset ends.
func Expiry(cfg ResetConfig, key routing.Key, e Entry, now time.Time) (at time.Time, reason string) {
	if key.IsSubagent() {
		// A subagent's session lives for its task (SPEC §3.3: disposable).
		// A timed rollover while it waited for its run would drop the model
		// and thinking level it was spawned with, and its task's context.
		return time.Time{}, ""
	}
	channel := key.Channel
	if channel == "" {
		channel = e.LastChannel
	}
	if channel == "" {
		channel = e.Channel
	}
	return evaluatePolicy(cfg.Resolve(key, channel), e, now)
}

func evaluatePolicy(p ResetPolicy, e Entry, now time.Time) (time.Time, string) {
	started := firstSet(e.SessionStartedAt, e.CreatedAt)
	last := firstSet(e.LastInteractionAt, started)

	var dailyAt, idleAt time.Time // instants at which each rule expired
	switch p.Mode {
	case ResetDaily:
		if !started.IsZero() {
			loc, err := loadZone(p.Timezone)
			if err != nil {
				loc = time.Local // Validate rejects this; keep evaluating
			}
			if b := lastBoundary(now, *p.AtHour, loc); started.Before(b) {
				dailyAt = nextBoundary(started, *p.AtHour, loc)
			}
		}
		fallthrough
	case ResetIdle:
		if n := *p.IdleMinutes; n > 0 && !last.IsZero() {
			if exp := last.Add(time.Duration(n) * time.Minute); now.After(exp) {
				idleAt = exp
			}
		}
	default:
		return time.Time{}, ""
	}
	switch {
	case !dailyAt.IsZero() && (idleAt.IsZero() || !idleAt.Before(dailyAt)):
		return dailyAt, ReasonDaily
	case !idleAt.IsZero():
		return idleAt, ReasonIdle
	}
	return time.Time{}, ""
}

// lastBoundary is the most recent boundary (boundaryOn) at or before now.
func lastBoundary(now time.Time, hour int, loc *time.Location) time.Time {
	y, m, d := now.In(loc).Date()
	b := boundaryOn(y, m, d, hour, loc)
	if b.After(now) {
		b = boundaryOn(y, m, d-1, hour, loc)
	}
	return b
}

// nextBoundary is the first boundary (boundaryOn) strictly after t.
func nextBoundary(t time.Time, hour int, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	b := boundaryOn(y, m, d, hour, loc)
	if !b.After(t) {
		b = boundaryOn(y, m, d+1, hour, loc)
	}
	return b
}

// boundaryOn is the daily reset instant of the day y-m-d in loc: the first
// instant its clock reads hour:00 or later. That is hour:00 on most days;
// on a day the clocks fall back over it, its first occurrence (one reset a
// day); on a day they spring forward over it, the instant they jump, as in
// the reference system (JavaScript's Date). time.Date alone leaves both
// cases unspecified: it put New York's skipped 02:00 at 01:00 EST and
// Havana's skipped midnight on the day before, and Berlin's repeated 02:00
// at its second occurrence. d may be out of range (time.Date normalises).
func boundaryOn(y int, m time.Month, d, hour int, loc *time.Location) time.Time {
	wall := time.Date(y, m, d, hour, 0, 0, 0, time.UTC) // the clock reading, as if in UTC
	_, before := wall.Add(-36 * time.Hour).In(loc).Zone()
	_, after := wall.Add(36 * time.Hour).In(loc).Zone()
	if before == after { // no change of offset near that day (nearly always)
		return wall.Add(-time.Duration(before) * time.Second)
	}
	var first time.Time
	for _, off := range [...]int{before, after} {
		t := wall.Add(-time.Duration(off) * time.Second)
		if _, o := t.In(loc).Zone(); o == off && (first.IsZero() || t.Before(first)) {
			first = t // the clock reads hour:00 at t
		}
	}
	if !first.IsZero() {
		return first
	}
	// The clocks skipped hour:00: read with the earlier offset it lies
	// after the jump, which is where that offset's period ends.
	t := wall.Add(-time.Duration(before) * time.Second)
	if start, _ := t.In(loc).ZoneBounds(); !start.IsZero() && !start.After(t) {
		return start
	}
	return t
}

func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
