package configs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gateway/gateway/access"
)

// validateRoomAgents checks that every agentId set on a group, topic,
// guild or channel names a configured agent.
func (c *Config) validateRoomAgents() error {
	agents := map[string]bool{}
	for _, a := range c.Agents.List {
		agents[strings.ToLower(a.ID)] = true
	}
	check := func(path string, rules map[string]access.GroupRule) error {
		return walkRules(path, rules, func(p string, r access.GroupRule) error {
			if r.AgentID != "" && !agents[strings.ToLower(strings.TrimSpace(r.AgentID))] {
				return fmt.Errorf("%s.agentId: %q is not an agent in agents.list", p, r.AgentID)
			}
			return nil
		})
	}
	for _, name := range sortedKeys(c.Channels.Telegram.Accounts) {
		if err := check("channels.telegram.accounts."+name+".groups", c.Channels.Telegram.Accounts[name].Groups); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(c.Channels.Discord.Accounts) {
		if err := check("channels.discord.accounts."+name+".guilds", c.Channels.Discord.Accounts[name].Guilds); err != nil {
			return err
		}
	}
	return nil
}

// walkRules calls fn for every rule in rules and the topics and channels
// nested in them, in key order, with the rule's path.
func walkRules(path string, rules map[string]access.GroupRule, fn func(string, access.GroupRule) error) error {
	for _, id := range sortedKeys(rules) {
		r := rules[id]
		p := path + "." + id
		if err := fn(p, r); err != nil {
			return err
		}
		if err := walkRules(p+".topics", r.Topics, fn); err != nil {
			return err
		}
		if err := walkRules(p+".channels", r.Channels, fn); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
