package limits

import (
	"fmt"
	"math"
	"time"
)

// notice is the friendly text for a refusal.
func notice(p *policy, d Decision, now time.Time) string {
	if d.Kind == KindRate {
		secs := int(math.Ceil(d.RetryAfter.Seconds()))
		wait := fmt.Sprintf("%d s", max(secs, 1))
		if secs >= 120 {
			wait = fmt.Sprintf("%d min", int(math.Ceil(float64(secs)/60)))
		}
		switch d.Scope {
		case ScopeRoom:
			return "This chat is sending messages faster than I can take them: try again in " + wait + "."
		case ScopeAgent:
			return "I'm getting too many messages right now: try again in " + wait + "."
		}
		return "Slow down: try again in " + wait + "."
	}
	who := map[string]string{ScopeSender: "You've", ScopeRoom: "This chat has", ScopeAgent: "I've"}[d.Scope]
	at := d.ResetAt.In(p.loc)
	zone := p.loc.String()
	if d.Kind == KindMonthly {
		return fmt.Sprintf("%s reached this month's limit; it resets on %s at %s (%s).",
			who, at.Format("2 January"), at.Format("15:04"), zone)
	}
	when := "at " + at.Format("15:04")
	if at.Sub(now) > 24*time.Hour {
		when = "on " + at.Format("2 January") + " at " + at.Format("15:04")
	}
	return fmt.Sprintf("%s reached today's limit; it resets %s (%s).", who, when, zone)
}
