package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/gatewayd"
)

// Exit codes of `gateway status` (also in its help and deploy/OPERATIONS.md).
const (
	statusExitFailing   = 1 // the daemon answered: something is failing
	statusExitNoAnswer  = 3 // the daemon did not answer (not running, wrong address, token refused)
	statusExitCodesHelp = "Exit codes: 0 ok or degraded (something recovers by itself); 1 something is failing;\n" +
		"2 usage error; 3 the daemon did not answer (not running, http.listen wrong, token refused)."
)

// exitError makes main exit with code after printing err.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// statusCmd is `gateway status`.
func statusCmd(cfgPath *string) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show what the running daemon is doing: channels, providers, MCP servers, lanes, delivery, storage, replicas",
		Long: "Ask the running daemon (GET /api/status) for its state: per channel account the connection\n" +
			"(connected, reconnecting since, failing with its last error, standby while another replica\n" +
			"leads), webhook or polling and the last message in and out; per provider its circuit breaker\n" +
			"and last error, and the fallbacks used; MCP servers; lanes busy and queued with the top\n" +
			"sessions by queue; the journal and outbox backlog and what was given up; storage health;\n" +
			"replicas and leader roles. Usable as a health check.\n\n" + statusExitCodesHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				dc := newDaemonClient(env.cfg)
				if dc == nil {
					return usage("status: http.listen %q is not host:port", env.cfg.HTTP.Listen)
				}
				st, raw, err := dc.status(env.ctx)
				if err != nil {
					return &exitError{code: statusExitNoAnswer, err: fmt.Errorf("status: %w", err)}
				}
				if asJSON {
					if _, err := env.out.Write(raw); err != nil {
						return err
					}
				} else {
					printStatus(env.out, st)
				}
				if st.Overall == gatewayd.StatusFailing {
					return &exitError{code: statusExitFailing, err: fmt.Errorf("status: failing: %s", strings.Join(st.Problems, "; "))}
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's answer as JSON")
	return c
}

// status reads GET /api/status: 200 (ok, degraded) and 503 (failing)
// both carry the status; raw is the answer's JSON, indented.
func (c *daemonClient) status(ctx context.Context) (gatewayd.Status, []byte, error) {
	var st gatewayd.Status
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/status", nil)
	if err != nil {
		return st, nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return st, nil, fmt.Errorf("%w: %v", errNoDaemon, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return st, nil, fmt.Errorf("daemon API GET /api/status: %w", err)
	}
	switch res.StatusCode {
	case http.StatusOK, http.StatusServiceUnavailable:
	case http.StatusUnauthorized:
		return st, nil, errors.New("daemon API GET /api/status: 401: the daemon wants http.token (set GATEWAY_HTTP_TOKEN or http.tokenFile)")
	default:
		return st, nil, fmt.Errorf("daemon API GET /api/status: %s: %s", res.Status, strings.TrimSpace(string(data)))
	}
	if err := json.Unmarshal(data, &st); err != nil || st.Overall == "" {
		return st, nil, fmt.Errorf("daemon API GET /api/status: %s: not a status answer (an older daemon?): %.200s", res.Status, data)
	}
	var pretty strings.Builder
	if err := printJSON(&pretty, json.RawMessage(data)); err != nil {
		return st, nil, err
	}
	return st, []byte(pretty.String()), nil
}
