package sessions

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
)

// Whatever the policy, an entry within FreshBounds is fresh by Evaluate,
// and an entry Evaluate finds stale misses the bounds.
func TestFreshBoundsImplyFresh(t *testing.T) {
	hour, zero, two, ten := 4, 0, 2, 10
	cfgs := map[string]ResetConfig{
		"off":   {},
		"daily": {Reset: ResetPolicy{Mode: ResetDaily, AtHour: &hour, Timezone: "Europe/Berlin"}},
		"idle":  {Reset: ResetPolicy{Mode: ResetIdle, IdleMinutes: &ten}},
		"both":  {Reset: ResetPolicy{Mode: ResetDaily, AtHour: &zero, IdleMinutes: &two, Timezone: "UTC"}},
		"by channel": {Reset: ResetPolicy{Mode: ResetIdle, IdleMinutes: &ten},
			ResetByChannel: map[string]ResetPolicy{"telegram": {Mode: ResetDaily, AtHour: &hour}}},
	}
	key, err := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 3, 29, 3, 30, 0, 0, time.UTC) // a DST change in Berlin
	for name, cfg := range cfgs {
		checked := 0
		for range 5000 {
			started := now.Add(-time.Duration(r.Int64N(int64(72 * time.Hour))))
			e := Entry{CreatedAt: started, SessionStartedAt: started,
				LastInteractionAt: started.Add(time.Duration(r.Int64N(int64(now.Sub(started)) + 1)))}
			sb, lb, ok := FreshBounds(cfg, key, now)
			if !ok {
				t.Fatalf("%s: no bounds for a key with a channel", name)
			}
			within := !e.SessionStartedAt.Before(sb) && !e.LastInteractionAt.Before(lb)
			if stale, reason := Evaluate(cfg, key, e, now); within && stale {
				t.Fatalf("%s: entry started %s, last %s is within the bounds (%s, %s) but stale (%s)",
					name, e.SessionStartedAt, e.LastInteractionAt, sb, lb, reason)
			}
			if within {
				checked++
			}
		}
		if checked == 0 && name != "both" {
			t.Errorf("%s: no entry fell within the bounds: the test proves nothing", name)
		}
	}
	if _, _, ok := FreshBounds(ResetConfig{}, routing.Key{Agent: "main", Main: "main"}, now); ok {
		t.Error("bounds for the main session, whose policy depends on the entry's channel")
	}
}
