package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/routing"
)

// routeResult is the output of `gateway route`.
type routeResult struct {
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
	ParentKey  string `json:"parentKey,omitempty"`
	Binding    string `json:"binding"`
	ResetType  string `json:"resetType"`
}

func routeCmd(cfgPath *string) *cobra.Command {
	var in channels.Inbound
	var chatType string
	var asJSON bool
	c := &cobra.Command{
		Use:   "route",
		Short: "Print the agent and session key a message would get (bindings, dmScope, identity links)",
		Example: "  gateway route --channel telegram --chat-type group --peer -100123 --thread 7 --topic\n" +
			"  gateway route --channel discord --chat-type direct --peer 987654321",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if in.Channel == "" || in.ChatID == "" {
				return usage("route: --channel and --peer are required")
			}
			switch channels.ChatType(chatType) {
			case channels.Direct, channels.Group, channels.Channel:
				in.ChatType = channels.ChatType(chatType)
			default:
				return usage("route: --chat-type %q is not direct, group or channel", chatType)
			}
			if in.IsTopic && in.ThreadID == "" {
				return usage("route: --topic needs --thread")
			}
			if in.ChatType == channels.Direct && in.SenderID == "" {
				in.SenderID = in.ChatID // in a DM the peer is the sender
			}
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				if in.Agent != "" {
					if err := configuredAgent(env.cfg, in.Agent); err != nil {
						return err
					}
				}
				res, err := route(env.cfg, in)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(env.out, res)
				}
				printRoute(env.out, res)
				return nil
			})
		},
	}
	f := c.Flags()
	f.StringVar(&in.Channel, "channel", "", "channel name: telegram, discord, web (required)")
	f.StringVar(&in.AccountID, "account", "default", "bot account id within the channel")
	f.StringVar(&chatType, "chat-type", "direct", "direct, group or channel")
	f.StringVar(&in.ChatID, "peer", "", "chat/channel id; for a DM the sender's id (required)")
	f.StringVar(&in.SenderID, "sender", "", "sender id (groups; identity links apply to DMs)")
	f.StringVar(&in.GuildID, "guild", "", "Discord guild id")
	f.StringVar(&in.ThreadID, "thread", "", "thread or forum-topic id")
	f.BoolVar(&in.IsTopic, "topic", false, "the thread is a Telegram forum topic")
	f.StringVar(&in.Agent, "agent", "", "address an agent explicitly (as the web API does)")
	f.BoolVar(&in.CaseSensitive, "case-sensitive", false, "keep the peer id's case")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// route resolves in as a daemon running cfg would.
func route(cfg *configs.Config, in channels.Inbound) (routeResult, error) {
	rt, err := gatewayd.RouteRuntime(cfg)
	if err != nil {
		return routeResult{}, err
	}
	r, err := rt.Route(in)
	if err != nil {
		return routeResult{}, fmt.Errorf("route: %w", err)
	}
	res := routeResult{AgentID: r.AgentID, SessionKey: r.Key.String(), Binding: r.Binding,
		ResetType: string(r.Key.ResetType())}
	if r.ParentKey != r.Key {
		res.ParentKey = r.ParentKey.String()
	}
	return res, nil
}

// configuredAgent checks an explicit --agent against the config's
// agents: the daemon refuses a message for any other (the web API answers
// 404), so no route is printed for it.
func configuredAgent(cfg *configs.Config, agent string) error {
	id, err := routing.NormalizeID(agent)
	if err != nil {
		return usage("route: --agent %q: %v", agent, err)
	}
	var ids []string
	for _, a := range cfg.Agents.List {
		if strings.EqualFold(a.ID, id) {
			return nil
		}
		ids = append(ids, a.ID)
	}
	return usage("route: --agent %q: no such agent in the config (agents: %s)", agent, strings.Join(ids, ", "))
}

func printRoute(out io.Writer, res routeResult) {
	fmt.Fprintf(out, "agent:       %s\nsession key: %s\n", res.AgentID, res.SessionKey)
	if res.ParentKey != "" {
		fmt.Fprintf(out, "parent key:  %s\n", res.ParentKey)
	}
	fmt.Fprintf(out, "binding:     %s\nreset type:  %s\n", res.Binding, res.ResetType)
}
