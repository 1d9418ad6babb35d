package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"
)

func logsCmd(cfgPath *string) *cobra.Command {
	var n int
	var follow bool
	c := &cobra.Command{
		Use:   "logs",
		Short: "Print the running daemon's recent log lines (JSON, one per line); --follow keeps printing new ones",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return usage("logs: -n: want a number of lines >= 0")
			}
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				dc := newDaemonClient(env.cfg)
				if !dc.alive(env.ctx) {
					return fmt.Errorf("logs: %w", errNoDaemon)
				}
				path := "/api/logs?n=" + strconv.Itoa(n)
				if follow {
					path += "&follow=1"
				}
				req, err := http.NewRequestWithContext(env.ctx, http.MethodGet, dc.base+path, nil)
				if err != nil {
					return err
				}
				if dc.token != "" {
					req.Header.Set("Authorization", "Bearer "+dc.token)
				}
				// No client timeout: --follow runs until interrupted (the
				// command's context ends on SIGINT/SIGTERM).
				res, err := (&http.Client{}).Do(req)
				if err != nil {
					return fmt.Errorf("logs: %w", err)
				}
				defer res.Body.Close()
				switch {
				case res.StatusCode == http.StatusUnauthorized:
					return fmt.Errorf("logs: 401: the daemon wants http.token (set GATEWAY_HTTP_TOKEN or http.tokenFile)")
				case res.StatusCode != http.StatusOK:
					return fmt.Errorf("logs: the daemon answered %s", res.Status)
				}
				sc := bufio.NewScanner(res.Body)
				sc.Buffer(make([]byte, 64<<10), 4<<20)
				for sc.Scan() {
					if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 { // empty lines keep a follow alive
						fmt.Fprintf(env.out, "%s\n", line)
					}
				}
				if err := sc.Err(); err != nil && env.ctx.Err() == nil {
					return fmt.Errorf("logs: %w", err)
				}
				return nil
			})
		},
	}
	c.Flags().IntVarP(&n, "lines", "n", 200, "how many recent lines to print first (the daemon keeps 2000)")
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	return c
}
