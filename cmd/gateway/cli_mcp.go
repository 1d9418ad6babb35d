package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/configs"
)

// mcpCmd is `gateway mcp list|probe`.
func mcpCmd(cfgPath *string) *cobra.Command {
	return group("mcp", "Show the MCP servers (mcp.servers) and the tools they offer", mcpListCmd(cfgPath), mcpProbeCmd(cfgPath))
}

// mcpListCmd is `gateway mcp list`.
func mcpListCmd(cfgPath *string) *cobra.Command {
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the configured MCP servers with their state and tools (the running daemon's view, else a connection from here)",
		Long: "List mcp.servers: transport, state, restarts and the tool names offered to agents.\n" +
			"With the daemon running the state is its own (GET /api/mcp/servers); otherwise each enabled\n" +
			"server is connected to from here once. Exits 1 when an enabled server is not ready.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				st, source, err := mcpStatus(env.ctx, env.cfg)
				if err != nil {
					return err
				}
				if listJSON {
					if err := printJSON(env.out, map[string]any{"source": source, "servers": st}); err != nil {
						return err
					}
				} else {
					printMCPList(env.out, source, st)
				}
				for _, s := range st {
					if s.State != mcp.StateReady && s.State != mcp.StateDisabled {
						return errProblems
					}
				}
				return nil
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")
	return list
}

// mcpProbeCmd is `gateway mcp probe NAME`.
func mcpProbeCmd(cfgPath *string) *cobra.Command {
	var probeJSON bool
	probe := &cobra.Command{
		Use:     "probe NAME",
		Short:   "Connect to one MCP server, list its tools with descriptions and input schemas, and disconnect",
		Example: "  gateway mcp probe github\n  gateway mcp probe files --json",
		Args:    exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				name := args[0]
				sc, ok := env.cfg.MCP.Servers[name]
				if !ok {
					return fmt.Errorf("mcp probe: no server %q in mcp.servers (configured: %s)", name, serverNames(env.cfg))
				}
				res, err := mcp.Probe(env.ctx, name, sc, mcp.ProbeOptions{Version: version})
				if err != nil {
					return err
				}
				if probeJSON {
					return printJSON(env.out, res)
				}
				printProbe(env.out, res, sc.IsEnabled())
				return nil
			})
		},
	}
	probe.Flags().BoolVar(&probeJSON, "json", false, "print JSON")
	return probe
}

func sortedServers(cfg *configs.Config) []string {
	var names []string
	for n := range cfg.MCP.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func serverNames(cfg *configs.Config) string {
	if len(cfg.MCP.Servers) == 0 {
		return "none"
	}
	return strings.Join(sortedServers(cfg), ", ")
}

// mcpStatus asks the running daemon, else connects to each enabled server
// (in parallel, each within its connectTimeout).
func mcpStatus(ctx context.Context, cfg *configs.Config) ([]mcp.Status, string, error) {
	if dc := newDaemonClient(cfg); dc.alive(ctx) {
		var body struct {
			Servers []mcp.Status `json:"servers"`
		}
		err := dc.do(ctx, http.MethodGet, "/api/mcp/servers", nil, &body)
		if err == nil {
			return body.Servers, "daemon", nil
		}
		if !strings.Contains(err.Error(), ": 404:") {
			return nil, "", fmt.Errorf("mcp list: %w", err)
		}
		// An older daemon without the route: connect from here.
	}
	names := sortedServers(cfg)
	out := make([]mcp.Status, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		sc := cfg.MCP.Servers[name]
		out[i] = mcp.Status{Name: name, Transport: sc.Transport(), State: mcp.StateDisabled, Tools: []string{}, Since: time.Now()}
		if !sc.IsEnabled() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := mcp.Probe(ctx, name, sc, mcp.ProbeOptions{Version: version})
			if err != nil {
				out[i].State, out[i].Error = mcp.StateRestarting, err.Error()
				if errors.Is(err, context.Canceled) {
					out[i].Error = "interrupted"
				}
				return
			}
			out[i].State = mcp.StateReady
			for _, t := range res.Tools {
				out[i].Tools = append(out[i].Tools, t.Name)
			}
		}()
	}
	wg.Wait()
	return out, "probe", nil
}

func printMCPList(w io.Writer, source string, st []mcp.Status) {
	if len(st) == 0 {
		fmt.Fprintln(w, "no MCP servers configured (mcp.servers)")
		return
	}
	if source == "probe" {
		fmt.Fprintln(w, "daemon not running: each server connected to from here")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tSTATE\tRESTARTS\tTOOLS")
	for _, s := range st {
		state := string(s.State)
		if source == "probe" && s.State == mcp.StateRestarting {
			state = "error"
		}
		tools := strings.Join(s.Tools, " ")
		if tools == "" {
			tools = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Transport, state, s.Restarts, tools)
	}
	_ = tw.Flush()
	for _, s := range st {
		if s.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", s.Name, s.Error)
		}
	}
}

func printProbe(w io.Writer, res mcp.ProbeResult, enabled bool) {
	fmt.Fprintf(w, "server %s (%s): %s %s, protocol %s\n", res.Server, res.Transport, res.ServerName, res.Version, res.Protocol)
	if !enabled {
		fmt.Fprintln(w, "note: enabled: false — agents are not offered these tools")
	}
	if res.Instructions != "" {
		fmt.Fprintf(w, "instructions: %s\n", res.Instructions)
	}
	fmt.Fprintf(w, "%d tools offered", len(res.Tools))
	if res.Filtered > 0 {
		fmt.Fprintf(w, " (%d left out by tools.allow/deny)", res.Filtered)
	}
	fmt.Fprintln(w)
	for _, t := range res.Tools {
		fmt.Fprintf(w, "\n%s", t.Name)
		if t.Remote != strings.TrimPrefix(t.Name, t.Server+mcp.Separator) {
			fmt.Fprintf(w, " (server-side name %q)", t.Remote)
		}
		fmt.Fprintln(w)
		if t.Description != "" {
			fmt.Fprintf(w, "  %s\n", t.Description)
		}
		var schema any
		if json.Unmarshal(t.InputSchema, &schema) == nil {
			b, _ := json.MarshalIndent(schema, "  ", "  ")
			fmt.Fprintf(w, "  input: %s\n", b)
		}
	}
}
