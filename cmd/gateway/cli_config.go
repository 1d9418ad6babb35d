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
)

func configCmd(cfgPath *string) *cobra.Command {
	validate := &cobra.Command{
		Use:   "validate",
		Short: "Load and check the config (file, GATEWAY_* env, *File secrets); errors name the key",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				src := *cfgPath
				if src == "" {
					src = "built-in defaults"
				}
				fmt.Fprintf(env.out, "config ok (%s)\n", src)
				return nil
			})
		},
	}
	var asJSON bool
	print := &cobra.Command{
		Use:   "print",
		Short: "Print the effective config (defaults, file and env merged) with secrets redacted",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				tree := redactedTree(reflect.ValueOf(env.cfg), "")
				if asJSON {
					return printJSON(env.out, tree)
				}
				enc := yaml.NewEncoder(env.out)
				enc.SetIndent(2)
				if err := enc.Encode(tree); err != nil {
					return err
				}
				return enc.Close()
			})
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

func healthcheckCmd(cfgPath *string) *cobra.Command {
	var target string
	c := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the daemon's /healthz answers 200 (for container HEALTHCHECKs; no curl needed)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			base := target
			if base == "" {
				err := withConfig(cmd, *cfgPath, func(env *cliEnv) error {
					dc := newDaemonClient(env.cfg)
					if dc == nil {
						return fmt.Errorf("healthcheck: http.listen %q is not host:port", env.cfg.HTTP.Listen)
					}
					base = dc.base
					return nil
				})
				if err != nil {
					return err
				}
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
