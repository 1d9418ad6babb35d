package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// testLimitsHold checks sessions.LimitReserver (stores that have it):
// holds count against the cap for every handle on the storage (replicas),
// a refusal takes nothing, Local counts, SettleLimits adds the cost and
// drops the holds in one step, an expired hold counts for nothing, and a
// hold without an id is refused.
func testLimitsHold(t *testing.T, open LimitsOpener) {
	f := newLimitFixture(t, open)
	r, ok := f.l.(sessions.LimitReserver)
	if !ok {
		t.Fatalf("%T is not a sessions.LimitReserver (TestLimits runs this case only for one)", f.l)
	}
	other := open(t, f.l).(sessions.LimitReserver)
	key := dayKey("sender", "main/telegram:1")
	f.add(f.l, dayDelta("sender", "main/telegram:1", 700, 0))
	live := time.Now().Add(time.Hour).Unix()
	hold := func(r sessions.LimitReserver, id string, amount, local int64, expires int64) sessions.LimitReserveResult {
		t.Helper()
		res, err := r.ReserveLimits(f.ctx, sessions.LimitHold{ID: id, Expires: expires, Items: []sessions.LimitHoldItem{{
			Key: key, End: limitDayEnd, Cap: sessions.LimitTotal{Tokens: 1000},
			Local: sessions.LimitTotal{Tokens: local}, Amount: sessions.LimitTotal{Tokens: amount}}}})
		if err != nil {
			t.Fatalf("ReserveLimits(%s): %v", id, err)
		}
		return res
	}
	if res := hold(r, "h1", 200, 0, live); !res.Granted {
		t.Fatalf("h1 at 700 of 1000: %+v, want granted", res)
	}
	if res := hold(r, "h2", 200, 0, live); !res.Granted {
		t.Fatalf("h2 at 900 of 1000: %+v, want granted", res)
	}
	if res := hold(r, "h3", 200, 0, live); res.Granted || res.Over != key {
		t.Fatalf("h3 at 1100 of 1000: %+v, want refused naming the key", res)
	}
	if res := hold(other, "h4", 1, 0, live); res.Granted {
		t.Fatalf("another handle at 1100 of 1000: %+v, want refused (it must count the holds)", res)
	}
	got, err := r.SettleLimits(f.ctx, []sessions.LimitDelta{dayDelta("sender", "main/telegram:1", 50, 0)}, []string{"h1", "h2", "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	if got[key].Tokens != 750 {
		t.Errorf("SettleLimits total = %+v, want 750 tokens", got[key])
	}
	if res := hold(other, "h5", 200, 0, live); !res.Granted {
		t.Fatalf("h5 at 750 of 1000 once h1 and h2 settled: %+v, want granted", res)
	}
	if res := hold(r, "h6", 1, 300, live); res.Granted {
		t.Fatalf("h6 at 950 + 300 unwritten of 1000: %+v, want refused (Local counts)", res)
	}
	if _, err := r.SettleLimits(f.ctx, nil, []string{"h5"}); err != nil {
		t.Fatal(err)
	}
	if res := hold(r, "gone", 1000, 0, time.Now().Add(-time.Minute).Unix()); !res.Granted {
		t.Fatalf("an already expired hold at 750 of 1000: %+v, want granted", res)
	}
	if res := hold(other, "h7", 200, 0, live); !res.Granted {
		t.Fatalf("h7 with only an expired hold beside it: %+v, want granted (expired holds count for nothing)", res)
	}
	if _, err := r.ReserveLimits(f.ctx, sessions.LimitHold{Expires: live, Items: []sessions.LimitHoldItem{{Key: key, End: limitDayEnd}}}); err == nil {
		t.Error("a hold without an id was accepted")
	}
}
