package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCmd() *cobra.Command {
	var cfgPath string
	root := &cobra.Command{
		Use:           "gateway",
		Short:         "Connects Telegram, Discord and web chats to LLM agents with durable sessions",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDaemon(cmd.Context(), cfgPath)
		},
	}
	root.PersistentFlags().StringVarP(&cfgPath, "config", "c", envOr("GATEWAY_CONFIG", ""),
		"YAML config file (default: built-in defaults; env GATEWAY_CONFIG)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(&cobra.Command{
		Use:   "run",
		Short: "Run the gateway daemon (the default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDaemon(cmd.Context(), cfgPath)
		},
	})
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "gateway", version)
		},
	})
	addOperatorCommands(root, &cfgPath)
	root.AddCommand(usageCmd(&cfgPath))
	root.AddCommand(mcpCmd(&cfgPath))
	return root
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// runDaemon loads the config file and runs the daemon until ctx ends; the
// file is watched for hot reload.
func runDaemon(ctx context.Context, cfgPath string) error {
	cfg, err := configs.Load(cfgPath)
	if err != nil {
		return err
	}
	d, err := gatewayd.New(cfg, gatewayd.Options{ConfigPath: cfgPath})
	if err != nil {
		return err
	}
	return d.Run(ctx)
}
