package configs

import (
	"fmt"
	"strings"

	"github.com/gateway/gateway/access"
)

// AgentRef is a key of the config that sends messages to an agent.
type AgentRef struct {
	Key     string // e.g. bindings[0].agentId
	AgentID string // lower-cased
}

// AgentRefs lists every agent the routing of c can send a message to, in
// a stable order: the default agent (the first of agents.list), each
// binding's and each room's agentId. A running daemon checks them on a hot
// reload against the agents it runs, since a new agent starts only on a
// restart.
func (c *Config) AgentRefs() []AgentRef {
	refs := []AgentRef{{Key: "agents.list[0].id (the default agent)", AgentID: c.RoutingConfig().DefaultAgent}}
	for i, b := range c.Bindings {
		refs = append(refs, AgentRef{Key: fmt.Sprintf("bindings[%d].agentId", i), AgentID: strings.ToLower(b.AgentID)})
	}
	for _, a := range c.Channels.accounts() {
		path := "channels." + a.channel + ".accounts." + a.id + "." + a.access.WithDefaults().GroupsKey
		_ = walkRules(path, a.access.Groups, func(p string, r access.GroupRule) error {
			if id := strings.ToLower(strings.TrimSpace(r.AgentID)); id != "" {
				refs = append(refs, AgentRef{Key: p + ".agentId", AgentID: id})
			}
			return nil
		})
	}
	return refs
}

// ProviderRef is a key of the config that hot reload applies and that
// names a provider: a room's or an account's ambientModel.
type ProviderRef struct {
	Key      string // e.g. channels.telegram.accounts.default.groups.-100.ambientModel
	Provider string // the model's provider part
}

// ProviderRefs lists, in a stable order, the ambientModel keys of c with
// the provider each names. A running daemon checks them on a hot reload
// against the providers it runs, since a new provider starts only on a
// restart.
func (c *Config) ProviderRefs() []ProviderRef {
	var refs []ProviderRef
	add := func(key, model string) {
		if p, _, ok := strings.Cut(model, "/"); ok {
			refs = append(refs, ProviderRef{Key: key, Provider: p})
		}
	}
	for _, a := range c.Channels.accounts() {
		path := "channels." + a.channel + ".accounts." + a.id
		add(path+".ambientModel", a.access.Room.AmbientModel)
		_ = walkRules(path+"."+a.access.WithDefaults().GroupsKey, a.access.Groups, func(p string, r access.GroupRule) error {
			add(p+".ambientModel", r.AmbientModel)
			return nil
		})
	}
	return refs
}
