package limits

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	good := Default()
	good.Timezone, good.ResetAt = "Europe/Berlin", "04:00"
	good.Exempt = []string{"telegram:123", "456"}
	good.Defaults = Set{Sender: Scope{Rate: "5/min", Burst: 10, Daily: Budget{Tokens: 1000}, Monthly: Budget{CostUSD: 5}},
		Room: Scope{Rate: "2/30s"}, Agent: Scope{Monthly: Budget{CostUSD: 100}}}
	good.Agents = map[string]Set{"main": {Sender: Scope{Unlimited: true}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("the zero config: %v", err)
	}
	cases := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"timezone", func(c *Config) { c.Timezone = "Mars/Olympus" }, "limits.timezone"},
		{"local timezone", func(c *Config) { c.Timezone = "Local" }, "limits.timezone"},
		{"resetAt", func(c *Config) { c.ResetAt = "25:00" }, "limits.resetAt"},
		{"resetAt words", func(c *Config) { c.ResetAt = "4am" }, "limits.resetAt"},
		{"noticeEvery", func(c *Config) { c.NoticeEvery = time.Millisecond }, "limits.noticeEvery"},
		{"exempt blank", func(c *Config) { c.Exempt = []string{" "} }, "limits.exempt[0]"},
		{"exempt half", func(c *Config) { c.Exempt = []string{"telegram:"} }, "limits.exempt[0]"},
		{"rate without unit", func(c *Config) { c.Defaults.Sender.Rate = "5" }, "limits.defaults.sender.rate"},
		{"rate zero", func(c *Config) { c.Defaults.Sender.Rate = "0/min" }, "limits.defaults.sender.rate"},
		{"rate unit", func(c *Config) { c.Defaults.Room.Rate = "5/fortnight" }, "limits.defaults.room.rate"},
		{"burst negative", func(c *Config) { c.Defaults.Sender.Burst = -1 }, "limits.defaults.sender.burst"},
		{"burst without rate", func(c *Config) { c.Defaults.Agent.Burst = 3 }, "limits.defaults.agent.burst"},
		{"tokens negative", func(c *Config) { c.Defaults.Sender.Daily.Tokens = -1 }, "limits.defaults.sender.daily.tokens"},
		{"cost negative", func(c *Config) { c.Defaults.Agent.Monthly.CostUSD = -1 }, "limits.defaults.agent.monthly.costUsd"},
		{"unlimited with limits", func(c *Config) { c.Agents["main"] = Set{Room: Scope{Unlimited: true, Rate: "1/s"}} }, "limits.agents.main.room.unlimited"},
		{"agent id", func(c *Config) { c.Agents["no such/agent"] = Set{} }, "limits.agents.no such/agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			c.Agents = map[string]Set{"main": good.Agents["main"]}
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in  string
		n   int
		per time.Duration
	}{
		{"5/min", 5, time.Minute}, {"1/s", 1, time.Second}, {"100/hour", 100, time.Hour}, {"3/day", 3, 24 * time.Hour},
		{" 2 / 30s ", 2, 30 * time.Second}, {"10/M", 10, time.Minute},
	} {
		n, per, err := ParseRate(tc.in)
		if err != nil || n != tc.n || per != tc.per {
			t.Errorf("ParseRate(%q) = %d, %s, %v; want %d, %s", tc.in, n, per, err, tc.n, tc.per)
		}
	}
}
