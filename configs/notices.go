package configs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/limits"
)

// Notices are what the config sets that will not do what it says, though
// it loads: `gateway config validate` prints them and the daemon logs them
// at start and at each reload. Today: a costUsd budget while a model an
// agent runs has no price (its turns count 0 USD: the budget never binds
// on them), a resetByChannel policy under a name no channel has (a
// typo: it applies to no session), an allowFrom list under dmPolicy
// open (it limits nothing), a key the file sets that a GATEWAY_*
// variable overrides (editing it in the file changes nothing), and a
// GATEWAY_* variable that names no key (a typo: it is ignored).
func (c *Config) Notices() []string {
	out := append(c.costNotices(), c.resetChannelNotices()...)
	out = append(out, c.dmPolicyNotices()...)
	out = append(out, c.envShadowed...)
	return append(out, c.envUnknown...)
}

// dmPolicyNotices names the accounts whose allowFrom their dmPolicy
// ignores: under open every sender is admitted, so a list of ids there
// (without "*") limits nothing, though it reads as if it did. (OpenClaw
// refuses open without "*" in allowFrom.)
func (c *Config) dmPolicyNotices() []string {
	var out []string
	check := func(channel, id string, rules access.Config) {
		if rules.DMPolicy != access.DMOpen || len(rules.AllowFrom) == 0 || slices.ContainsFunc(rules.AllowFrom, func(e string) bool {
			return strings.TrimSpace(e) == access.Wildcard
		}) {
			return
		}
		out = append(out, fmt.Sprintf("channels.%s.accounts.%s: dmPolicy open admits every sender: allowFrom %v limits nothing "+
			"(dmPolicy allowlist admits only them; allowFrom [\"*\"] says open on purpose)", channel, id, rules.AllowFrom))
	}
	for _, id := range sortedKeys(c.Channels.Telegram.Accounts) {
		check("telegram", id, c.Channels.Telegram.Accounts[id].Access())
	}
	for _, id := range sortedKeys(c.Channels.Discord.Accounts) {
		check("discord", id, c.Channels.Discord.Accounts[id].Access())
	}
	return out
}

// channelNames are the channels a session's origin can name.
var channelNames = []string{"telegram", "discord", "web"}

// resetChannelNotices names the resetByChannel keys of no channel
// (matched in any case, as sessions.ResetConfig.Resolve does).
func (c *Config) resetChannelNotices() []string {
	var out []string
	for _, ch := range sortedKeys(c.Session.ResetByChannel) {
		if ch == "" || slices.Contains(channelNames, strings.ToLower(ch)) {
			continue // an empty name is Validate's error
		}
		out = append(out, fmt.Sprintf("session.resetByChannel.%s: no channel is named %q (%s): the policy applies to no session",
			ch, ch, strings.Join(channelNames, ", ")))
	}
	return out
}

// costNotices names the unpriced models of agents under a cost budget.
func (c *Config) costNotices() []string {
	if !costBudgets(c.Limits) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	check := func(key, ref string) {
		if ref == "" || seen[ref] {
			return
		}
		seen[ref] = true
		prov, model, ok := strings.Cut(ref, "/")
		if !ok {
			return
		}
		p, ok := c.Providers[prov]
		if !ok || p.Type == "echo" { // the offline echo costs nothing indeed
			return
		}
		if m, ok := p.Models[model]; ok && (m.Price.Input > 0 || m.Price.Output > 0) {
			return
		}
		out = append(out, fmt.Sprintf("limits: a costUsd budget is set, but %s (%s) has no price "+
			"(providers.%s.models.%s.price): its turns count 0 USD toward every cost budget", ref, key, prov, model))
	}
	models := func(key string, primary string, fallbacks []string) {
		check(key+".primary", primary)
		for i, f := range fallbacks {
			check(fmt.Sprintf("%s.fallbacks[%d]", key, i), f)
		}
	}
	d := c.Agents.Defaults.Model
	models("agents.defaults.model", d.Primary, d.Fallbacks)
	for i, a := range c.Agents.List {
		models(fmt.Sprintf("agents.list[%d].model", i), a.Model.Primary, a.Model.Fallbacks)
	}
	return out
}

// costBudgets reports whether any scope of l caps a cost in USD.
func costBudgets(l limits.Config) bool {
	set := func(s limits.Set) bool {
		for _, sc := range []limits.Scope{s.Sender, s.Room, s.Agent} {
			if sc.Daily.CostUSD > 0 || sc.Monthly.CostUSD > 0 {
				return true
			}
		}
		return false
	}
	if set(l.Defaults) {
		return true
	}
	for _, s := range l.Agents {
		if set(s) {
			return true
		}
	}
	return false
}
