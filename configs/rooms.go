package configs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gateway/gateway/access"
)

// channelAccount is one account of a channel section, as the checks of the
// channels section and of the rooms' agents see it.
type channelAccount struct {
	channel, id string
	// access is the account's access rules (its rooms: groups, guilds).
	access access.Config
	// validate is the account config's own check.
	validate func() error
}

// accounts lists every account of every channel, channel by channel and in
// account order: the one place configs walks the channels (a new channel
// adds its section here; gatewayd's channel table assembles them).
func (c Channels) accounts() []channelAccount {
	var out []channelAccount
	for _, id := range sortedKeys(c.Telegram.Accounts) {
		a := c.Telegram.Accounts[id]
		out = append(out, channelAccount{channel: "telegram", id: id, access: a.Access(), validate: a.Validate})
	}
	for _, id := range sortedKeys(c.Discord.Accounts) {
		a := c.Discord.Accounts[id]
		out = append(out, channelAccount{channel: "discord", id: id, access: a.Access(), validate: a.Validate})
	}
	return out
}

// Validate checks every channel account: its id and its config.
func (c Channels) Validate() error {
	if err := c.Web.Validate(); err != nil {
		return err
	}
	for _, a := range c.accounts() {
		if err := idError("channels."+a.channel+".accounts."+a.id, "an account id", a.id); err != nil {
			return err
		}
		if err := a.validate(); err != nil {
			return fmt.Errorf("channels.%s.accounts.%s.%w", a.channel, a.id, err)
		}
	}
	if err := c.Telegram.validateBots(); err != nil {
		return err
	}
	return c.Discord.validateBots()
}

// validateRoomAgents checks that every agentId set on a group, topic,
// guild or channel names a configured agent, and every ambientModel (there
// or on the account) a configured provider.
func (c *Config) validateRoomAgents() error {
	agents := c.Agents.ids()
	for _, a := range c.Channels.accounts() {
		path := "channels." + a.channel + ".accounts." + a.id
		if err := c.checkAmbientModel(path, a.access.Room.AmbientModel); err != nil {
			return err
		}
		rooms := a.access.WithDefaults().GroupsKey
		err := walkRules(path+"."+rooms, a.access.Groups, func(p string, r access.GroupRule) error {
			if r.AgentID != "" && !agents[strings.ToLower(strings.TrimSpace(r.AgentID))] {
				return fmt.Errorf("%s.agentId: %q is not an agent in agents.list", p, r.AgentID)
			}
			return c.checkAmbientModel(p, r.AmbientModel)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkAmbientModel checks a room's ambientModel ("" is none) against
// the providers.
func (c *Config) checkAmbientModel(path, model string) error {
	if model == "" {
		return nil
	}
	p, _, _ := strings.Cut(model, "/")
	if _, ok := c.Providers[p]; !ok {
		return fmt.Errorf("%s.ambientModel: %q names no provider in providers (have %v)", path, model, sortedKeys(c.Providers))
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
