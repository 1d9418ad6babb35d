package configs

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/limits"
)

func TestLoadLimits(t *testing.T) {
	c, err := LoadBytes([]byte(`
agents:
  list: [{id: main}, {id: vip}]
commands: {owners: ["telegram:7"]}
limits:
  timezone: Europe/Berlin
  resetAt: "04:00"
  noticeEvery: 2m
  exempt: ["telegram:123", 456]
  exemptOwners: true
  defaults:
    sender: {rate: 5/min, burst: 10, daily: {tokens: 200000}, monthly: {costUsd: 5}}
    room: {rate: 30/min, daily: {costUsd: 2.5}}
    agent: {monthly: {costUsd: 100}}
  agents:
    vip: {sender: {unlimited: true}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Limits
	want := limits.Scope{Rate: "5/min", Burst: 10, Daily: limits.Budget{Tokens: 200000}, Monthly: limits.Budget{CostUSD: 5}}
	if l.Timezone != "Europe/Berlin" || l.ResetAt != "04:00" || l.NoticeEvery != 2*time.Minute || !l.ExemptOwners ||
		len(l.Exempt) != 2 || l.Exempt[1] != "456" || l.Defaults.Sender != want || l.Defaults.Room.Daily.CostUSD != 2.5 ||
		l.Defaults.Agent.Monthly.CostUSD != 100 || !l.Agents["vip"].Sender.Unlimited {
		t.Fatalf("limits = %+v", l)
	}
	d := Default().Limits
	if d.Timezone != "UTC" || d.ResetAt != "00:00" || d.NoticeEvery != time.Minute {
		t.Errorf("default limits = %+v, want UTC midnight and a notice a minute", d)
	}
	for name, tc := range map[string]struct{ yaml, want string }{
		"bad rate":      {"limits: {defaults: {sender: {rate: fast}}}", "limits.defaults.sender.rate"},
		"bad zone":      {"limits: {timezone: Nowhere/Land}", "limits.timezone"},
		"bad reset":     {`limits: {resetAt: "4"}`, "limits.resetAt"},
		"unknown agent": {"limits: {agents: {ghost: {sender: {rate: 1/s}}}}", "limits.agents.ghost"},
		"unknown key":   {"limits: {defaults: {sender: {rat: 1/s}}}", "rat"},
		"cost text":     {"limits: {defaults: {room: {daily: {costUsd: lots}}}}", "costUsd"},
		"negative":      {"limits: {defaults: {agent: {monthly: {tokens: -5}}}}", "limits.defaults.agent.monthly.tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tc.yaml+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadBytes = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
