package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/api"
)

// sessionsSendCmd is `gateway sessions send KEY TEXT...`: an operator's
// message into a session's chat. Only the daemon holds the channels, so it
// needs the daemon; it delivers through its outbox and records the message
// in the transcript (no agent turn starts).
func sessionsSendCmd(cfgPath *string) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "send KEY TEXT...",
		Short: "Send TEXT from the operator into the chat of KEY's session (needs the running daemon; starts no agent turn)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				f, err := findSession(env.state, env.cfg, args[0])
				if err != nil {
					return err
				}
				dc := newDaemonClient(env.cfg)
				if !dc.alive(env.ctx) {
					return errors.New("sessions send: the daemon is not running (only it reaches the chats); start it with `gateway run`")
				}
				path := "/api/agents/" + url.PathEscape(f.AgentID) + "/sessions/" + url.PathEscape(f.Key.String()) + "/messages"
				var answer struct {
					Sent json.RawMessage `json:"sent"`
				}
				if err := dc.do(env.ctx, "POST", path, api.SendRequest{Text: strings.Join(args[1:], " ")}, &answer); err != nil {
					return fmt.Errorf("sessions send: %w", err)
				}
				if asJSON {
					_, err := fmt.Fprintln(env.out, string(answer.Sent))
					return err
				}
				var sent struct {
					SessionID, Channel, ChatID, ThreadID string
				}
				_ = json.Unmarshal(answer.Sent, &sent)
				where := sent.Channel + " chat " + sent.ChatID
				if sent.ThreadID != "" {
					where += " thread " + sent.ThreadID
				}
				fmt.Fprintf(env.out, "sent to %s (%s, session %s)\n", f.Key, where, sent.SessionID)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's answer as JSON")
	return c
}
