package dispatch

import (
	"fmt"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
)

// Route resolves where in goes under rt: the bindings, then the room's
// agentId (a group, topic or channel bound to an agent in its own
// settings) above them; an explicit agent (the web API's) wins over both.
func (rt *Runtime) Route(in channels.Inbound) (routing.Route, error) {
	route, err := Resolve(rt.Resolver, in)
	if err != nil || in.Agent != "" || in.ChatType == channels.Direct {
		return route, err
	}
	id := rt.RoomFor(in).AgentID
	if id == "" {
		return route, nil
	}
	agent, err := routing.NormalizeID(id)
	if err != nil {
		return routing.Route{}, fmt.Errorf("routing: room agent %q: %w", id, err)
	}
	route.AgentID, route.Key.Agent, route.ParentKey.Agent = agent, agent, agent
	route.Binding = "room"
	return route, nil
}
