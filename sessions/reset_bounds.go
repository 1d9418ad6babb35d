package sessions

import (
	"time"

	"github.com/gateway/gateway/routing"
)

// FreshBounds gives bounds that prove a session of key fresh at now
// without reading its entry, for a store that checks them in the same
// statement that records the message (pgstore's Begin): an entry whose
// SessionStartedAt is not before started and whose LastInteractionAt is
// not before last is one Evaluate reports fresh. A zero bound is no
// condition. The bounds are sufficient, not necessary: an entry that
// misses them (zero clocks, older fields) may still be fresh, which the
// caller learns from Evaluate on the entry. ok is false when the policy
// depends on the entry (a key without a channel, such as the main
// session): the entry must be read first.
func FreshBounds(cfg ResetConfig, key routing.Key, now time.Time) (started, last time.Time, ok bool) {
	if key.IsSubagent() {
		return time.Time{}, time.Time{}, true // never stale (Expiry)
	}
	if key.Channel == "" {
		return time.Time{}, time.Time{}, false
	}
	p := cfg.Resolve(key, key.Channel)
	switch p.Mode {
	case ResetDaily:
		loc, err := loadZone(p.Timezone)
		if err != nil {
			loc = time.Local // as evaluatePolicy
		}
		started = lastBoundary(now, *p.AtHour, loc)
		fallthrough
	case ResetIdle:
		if n := *p.IdleMinutes; n > 0 {
			last = now.Add(-time.Duration(n) * time.Minute)
		}
	}
	return started, last, true
}
