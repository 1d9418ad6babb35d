package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Config is the limits section of the YAML (hot-reloaded):
//
//	limits:
//	  timezone: Europe/Berlin   # budget days and months start at resetAt here (default UTC)
//	  resetAt: "04:00"          # default 00:00
//	  noticeEvery: 1m           # at most one notice per sender, room and reason in this window
//	  exempt: ["telegram:123"]  # senders never limited ("channel:id", or a bare id on every channel)
//	  exemptOwners: true        # commands.owners are exempt too
//	  defaults:
//	    sender: {rate: 5/min, burst: 10, daily: {tokens: 200000}, monthly: {costUsd: 5}}
//	    room:   {rate: 30/min, daily: {costUsd: 2}}
//	    agent:  {monthly: {costUsd: 100}}
//	  agents:
//	    main: {sender: {rate: 10/min, daily: {tokens: 500000}}}
//
// Zero means no limit. An agent's sender, room or agent block, when set,
// replaces the same block of defaults (unlimited: true lifts the scope's
// limits for that agent).
type Config struct {
	Timezone     string         `mapstructure:"timezone"`
	ResetAt      string         `mapstructure:"resetAt"`
	NoticeEvery  time.Duration  `mapstructure:"noticeEvery"`
	TurnEstimate Budget         `mapstructure:"turnEstimate"`
	Exempt       []string       `mapstructure:"exempt"`
	ExemptOwners bool           `mapstructure:"exemptOwners"`
	Defaults     Set            `mapstructure:"defaults"`
	Agents       map[string]Set `mapstructure:"agents"`
}

// Set is the limits of the three scopes.
type Set struct {
	Sender Scope `mapstructure:"sender"`
	Room   Scope `mapstructure:"room"`
	Agent  Scope `mapstructure:"agent"`
}

// Scope is the limits of one scope: a message rate as a token bucket
// (Rate "5/min" refills 5 messages a minute, Burst is the bucket's size,
// default the rate's count) and token and cost budgets per day and month.
type Scope struct {
	Rate      string `mapstructure:"rate"`
	Burst     int    `mapstructure:"burst"`
	Daily     Budget `mapstructure:"daily"`
	Monthly   Budget `mapstructure:"monthly"`
	Unlimited bool   `mapstructure:"unlimited"`
}

// Budget caps the tokens (pi's usage.totalTokens: input, output and cache)
// and the cost in USD (usage.cost.total, from the configured prices) of a
// window. Zero is no cap.
type Budget struct {
	Tokens  int64   `mapstructure:"tokens"`
	CostUSD float64 `mapstructure:"costUsd"`
}

// DefaultNoticeEvery is how often a throttled sender is told, per room and
// reason.
const DefaultNoticeEvery = time.Minute

// DefaultTurnEstimate is what a turn holds on each budget it counts
// toward from its check until its real cost is charged (a field left zero
// in turnEstimate takes this one's): a prompt of about 16,000 tokens plus
// 8,192 tokens of answer (the Anthropic client's default max_tokens), and
// ten US cents. The limiter raises it per agent to the largest turn it has
// charged since it started, so a deployment whose turns cost more is held
// to what they really cost after its first such turn.
var DefaultTurnEstimate = Budget{Tokens: 24_000, CostUSD: 0.10}

// Default returns the documented defaults: no limits, UTC midnight.
func Default() Config {
	return Config{Timezone: "UTC", ResetAt: "00:00", NoticeEvery: DefaultNoticeEvery, Agents: map[string]Set{}}
}

// Validate names the first bad key.
func (c Config) Validate() error {
	_, err := compile(c, nil)
	return err
}

// on reports whether b caps anything.
func (b Budget) on() bool { return b.Tokens > 0 || b.CostUSD > 0 }

// zero reports a block the YAML did not set.
func (s Scope) zero() bool { return s == Scope{} }

// rate is a parsed Scope: per second refill and bucket size (0: no rate).
type rate struct {
	perSec float64
	burst  float64
}

// compiledScope is a Scope checked and parsed.
type compiledScope struct {
	rate    rate
	daily   Budget
	monthly Budget
}

func (s compiledScope) budgets() bool { return s.daily.on() || s.monthly.on() }

func compileScope(path string, s Scope) (compiledScope, error) {
	var out compiledScope
	if s.Unlimited {
		if s.Rate != "" || s.Burst != 0 || s.Daily.on() || s.Monthly.on() {
			return out, fmt.Errorf("%s.unlimited: set together with limits; use one or the other", path)
		}
		return out, nil
	}
	if s.Rate != "" {
		n, per, err := ParseRate(s.Rate)
		if err != nil {
			return out, fmt.Errorf("%s.rate: %w", path, err)
		}
		out.rate = rate{perSec: float64(n) / per.Seconds(), burst: float64(n)}
	}
	switch {
	case s.Burst < 0 || s.Burst > 1_000_000:
		return out, fmt.Errorf("%s.burst: %d is not between 1 and 1000000", path, s.Burst)
	case s.Burst > 0 && s.Rate == "":
		return out, fmt.Errorf("%s.burst: set without a rate", path)
	case s.Burst > 0:
		out.rate.burst = float64(s.Burst)
	}
	for _, b := range []struct {
		name string
		v    Budget
	}{{"daily", s.Daily}, {"monthly", s.Monthly}} {
		if b.v.Tokens < 0 {
			return out, fmt.Errorf("%s.%s.tokens: %d must not be negative", path, b.name, b.v.Tokens)
		}
		if b.v.CostUSD < 0 || math.IsNaN(b.v.CostUSD) || math.IsInf(b.v.CostUSD, 0) {
			return out, fmt.Errorf("%s.%s.costUsd: %v must be a non-negative number", path, b.name, b.v.CostUSD)
		}
	}
	out.daily, out.monthly = s.Daily, s.Monthly
	return out, nil
}

// ParseRate reads "N/unit": unit is s, sec, second, m, min, minute, h,
// hour, d or day, or a Go duration such as 30s ("5/30s").
func ParseRate(s string) (n int, per time.Duration, err error) {
	count, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not N/unit such as 5/min", s)
	}
	n, err = strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n < 1 || n > 1_000_000 {
		return 0, 0, fmt.Errorf("%q: the count %q is not a whole number from 1 to 1000000", s, count)
	}
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	case "d", "day":
		per = 24 * time.Hour
	default:
		per, err = time.ParseDuration(strings.TrimSpace(unit))
		if err != nil || per < time.Second || per > 31*24*time.Hour {
			return 0, 0, fmt.Errorf("%q: the unit %q is not s, min, h, day or a duration from 1s to 744h", s, unit)
		}
	}
	return n, per, nil
}

// parseClock reads "HH:MM".
func parseClock(s string) (h, m int, err error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not a time of day HH:MM such as 04:00", s)
	}
	return t.Hour(), t.Minute(), nil
}
