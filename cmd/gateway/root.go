package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCmd() *cobra.Command {
	var cfgPath string
	root := &cobra.Command{
		Use:                        "gateway",
		Short:                      "Connects Telegram, Discord and web chats to LLM agents with durable sessions",
		SilenceUsage:               true,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return usage("%s; 'gateway --help' lists the commands", msg)
		},
		// Bare `gateway` prints the help: starting a daemon on the
		// built-in defaults (and creating ~/.gateway) is never what a
		// first try means. Flags without a command run the daemon, as
		// the quick start's `gateway --config configs/quickstart.yaml`.
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().NFlag() == 0 {
				_ = cmd.Help()
				return usage("a command is required (the daemon: gateway run --config FILE)")
			}
			return runDaemon(cmd.Context(), cfgPath)
		},
	}
	root.PersistentFlags().StringP("config", "c", "", "YAML config file (default: built-in defaults; env GATEWAY_CONFIG)")
	// The command line's settings: a flag wins over its GATEWAY_ variable
	// (viper binds both). The config file's own keys and their GATEWAY_*
	// overrides are configs.Load's: viper lower-cases keys, and map keys
	// such as an MCP server's env names keep their case there.
	settings := viper.New()
	settings.SetEnvPrefix("GATEWAY")
	if err := errors.Join(settings.BindEnv("config"), settings.BindPFlag("config", root.PersistentFlags().Lookup("config"))); err != nil {
		panic(fmt.Sprintf("gateway: binding the command line's settings: %v", err)) // a programming error
	}
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		cfgPath = settings.GetString("config")
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(&cobra.Command{
		Use:   "run",
		Short: "Run the gateway daemon (also: gateway --config FILE)",
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
	root.AddCommand(memoryCmd(&cfgPath))
	root.AddCommand(mcpCmd(&cfgPath))
	return root
}

// runDaemon loads the config file and runs the daemon until ctx ends; the
// file is watched for hot reload.
func runDaemon(ctx context.Context, cfgPath string) error {
	cfg, err := configs.Load(cfgPath)
	if err != nil {
		return err
	}
	d, err := gatewayd.New(cfg, gatewayd.Options{ConfigPath: cfgPath, Version: version})
	if err != nil {
		return err
	}
	return d.Run(ctx)
}
