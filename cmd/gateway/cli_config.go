package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/gatewayd"
)

func configCmd(cfgPath *string) *cobra.Command {
	validate := &cobra.Command{
		Use:   "validate",
		Short: "Load and check the config (file, GATEWAY_* env, *File secrets); errors name the key",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := loadConfig(*cfgPath); err != nil {
				return err
			}
			src := *cfgPath
			if src == "" {
				src = "built-in defaults"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "config ok (%s)\n", src)
			return nil
		},
	}
	var asJSON bool
	print := &cobra.Command{
		Use:   "print",
		Short: "Print the effective config (defaults, file and env merged) with secrets redacted",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(*cfgPath)
			if err != nil {
				return err
			}
			tree := redactedTree(reflect.ValueOf(cfg), "")
			if asJSON {
				return printJSON(cmd.OutOrStdout(), tree)
			}
			enc := yaml.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent(2)
			if err := enc.Encode(tree); err != nil {
				return err
			}
			return enc.Close()
		},
	}
	print.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of YAML")
	return group("config", "Validate or print the configuration", validate, print)
}

// redacted replaces a secret's value.
const redacted = "<redacted>"

// isSecretKey says whether a config key holds a secret: token, apiKey,
// secretToken, password, an Authorization or X-Api-Key header, a *_TOKEN
// variable... but not tokenFile (a path) or *Tokens (counts).
func isSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, suffix := range []string{"token", "apikey", "secret", "password", "secrettoken",
		"authorization", "api-key", "api_key"} { // header and env names (mcp.servers.*.headers, env)
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// redactURL hides the password of a URL value (storage.postgres.url may
// hold one, in its user info or as a password parameter) as url.Redacted
// does; anything else is returned as it is.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return s
	}
	_, inUser := u.User.Password()
	q := u.Query()
	if !inUser && !q.Has("password") {
		return s
	}
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// redactedTree turns a config value into maps keyed by the YAML key names
// (mapstructure tags), with durations as strings and secrets redacted.
func redactedTree(v reflect.Value, key string) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := strings.Split(f.Tag.Get("mapstructure"), ",")[0]
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out[name] = redactedTree(v.Field(i), name)
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			ks := fmt.Sprint(k.Interface())
			out[ks] = redactedTree(v.MapIndex(k), ks)
		}
		return out
	case reflect.Slice, reflect.Array:
		out := make([]any, 0, v.Len())
		for i := 0; i < v.Len(); i++ {
			out = append(out, redactedTree(v.Index(i), key))
		}
		return out
	case reflect.String:
		if s := v.String(); s != "" && isSecretKey(key) {
			return redacted
		}
		return redactURL(v.String())
	default:
		return v.Interface()
	}
}

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
			cfg, err := loadConfig(*cfgPath)
			if err != nil {
				return err
			}
			rt, err := gatewayd.RouteRuntime(cfg)
			if err != nil {
				return err
			}
			r, err := rt.Route(in)
			if err != nil {
				return fmt.Errorf("route: %w", err)
			}
			res := routeResult{AgentID: r.AgentID, SessionKey: r.Key.String(), Binding: r.Binding,
				ResetType: string(r.Key.ResetType())}
			if r.ParentKey != r.Key {
				res.ParentKey = r.ParentKey.String()
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, res)
			}
			fmt.Fprintf(out, "agent:       %s\nsession key: %s\n", res.AgentID, res.SessionKey)
			if res.ParentKey != "" {
				fmt.Fprintf(out, "parent key:  %s\n", res.ParentKey)
			}
			fmt.Fprintf(out, "binding:     %s\nreset type:  %s\n", res.Binding, res.ResetType)
			return nil
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

func healthcheckCmd(cfgPath *string) *cobra.Command {
	var target string
	c := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the daemon's /healthz answers 200 (for container HEALTHCHECKs; no curl needed)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			base := target
			if base == "" {
				cfg, err := loadConfig(*cfgPath)
				if err != nil {
					return err
				}
				dc := newDaemonClient(cfg)
				if dc == nil {
					return fmt.Errorf("healthcheck: http.listen %q is not host:port", cfg.HTTP.Listen)
				}
				base = dc.base
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/healthz", nil)
			if err != nil {
				return usage("healthcheck: %v", err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("healthcheck: %w", err)
			}
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("healthcheck: /healthz answered %s", res.Status)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	c.Flags().StringVar(&target, "url", "", "base URL (default: from http.listen)")
	return c
}
