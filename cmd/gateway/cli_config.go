package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/gateway/gateway/configs"
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
				for _, n := range env.cfg.Notices() {
					fmt.Fprintf(env.out, "note: %s\n", n)
				}
				return nil
			})
		},
	}
	var asJSON bool
	print := &cobra.Command{
		Use:   "print",
		Short: "Print the effective config (defaults, file and env merged; it loads back to the same config) with secrets redacted",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				tree := configs.Tree(env.cfg)
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
