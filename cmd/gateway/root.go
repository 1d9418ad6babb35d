package main

import (
	"fmt"

	"github.com/spf13/cobra"
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
			return runDaemon(cmd.Context(), cfgPath, nil)
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
			return runDaemon(cmd.Context(), cfgPath, nil)
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
	return root
}
