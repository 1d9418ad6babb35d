package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/gatewayd"
)

func pairingCmd(cfgPath *string) *cobra.Command {
	return group("pairing", "List and approve pairing codes of unknown DM senders (dmPolicy: pairing)",
		pairingListCmd(cfgPath), pairingApproveCmd(cfgPath), pairingRevokeCmd(cfgPath))
}

// pairingListCmd is `gateway pairing list [CHANNEL]`.
func pairingListCmd(cfgPath *string) *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [CHANNEL]",
		Short: "List pending pairing codes and approved senders (of CHANNEL, or every channel)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usage("%s: at most one argument (CHANNEL)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			channel := ""
			if len(args) == 1 {
				var err error
				if channel, err = pairingChannel(args[0]); err != nil {
					return err
				}
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				ps := env.pairing()
				pending, err := ps.List(channel)
				if err != nil {
					return err
				}
				approved, err := ps.Approved(channel)
				if err != nil {
					return err
				}
				if pending == nil {
					pending = []access.Request{}
				}
				if approved == nil {
					approved = []access.Approval{}
				}
				if asJSON {
					return printJSON(env.out, map[string]any{"pending": pending, "approved": approved})
				}
				return printPairing(env.out, pending, approved)
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return list
}

// printPairing writes the pending codes and the approved senders as two
// tables.
func printPairing(out io.Writer, pending []access.Request, approved []access.Approval) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PENDING\tCHANNEL\tACCOUNT\tSENDER\tNAME\tEXPIRES")
	for _, r := range pending {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Code, r.Channel, r.AccountID, r.SenderID,
			orDash(r.SenderName), r.ExpiresAt.Local().Format(time.DateTime))
	}
	_ = tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APPROVED\tCHANNEL\tACCOUNT\tSENDER\tNAME")
	for _, a := range approved {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ApprovedAt.Local().Format(time.DateTime), a.Channel,
			a.AccountID, a.SenderID, orDash(a.SenderName))
	}
	return tw.Flush()
}

// pairingApproveCmd is `gateway pairing approve CHANNEL CODE`.
func pairingApproveCmd(cfgPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "approve CHANNEL CODE",
		Short: "Admit the sender who was given CODE (the running daemon sees it on their next message)",
		Args:  exactArgs("CHANNEL", "CODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			channel, err := pairingChannel(args[0])
			if err != nil {
				return err
			}
			args[0] = channel
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				a, err := env.pairing().Approve(args[0], args[1])
				switch {
				case errors.Is(err, access.ErrCodeNotFound):
					return fmt.Errorf("pairing approve: no pending code %s on %s (see `gateway pairing list`)", args[1], args[0])
				case errors.Is(err, access.ErrCodeExpired):
					return fmt.Errorf("pairing approve: code %s expired; ask the sender to write again for a new one", args[1])
				case err != nil:
					return fmt.Errorf("pairing approve: %w", err)
				}
				name := a.SenderName
				if name != "" {
					name = " (" + name + ")"
				}
				fmt.Fprintf(env.out, "approved %s sender %s%s on account %s\n", a.Channel, a.SenderID, name, a.AccountID)
				return nil
			})
		},
	}
}

// pairingRevokeCmd is `gateway pairing revoke CHANNEL ACCOUNT SENDER`.
func pairingRevokeCmd(cfgPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke CHANNEL ACCOUNT SENDER",
		Short: "Withdraw an approved sender",
		Args:  exactArgs("CHANNEL", "ACCOUNT", "SENDER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			channel, err := pairingChannel(args[0])
			if err != nil {
				return err
			}
			args[0] = channel
			if done, err := revokeThroughDaemon(cmd, *cfgPath, args[0], args[1], args[2]); done || err != nil {
				return err
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				ok, err := env.pairing().Revoke(args[0], args[1], args[2])
				if err != nil {
					return fmt.Errorf("pairing revoke: %w", err)
				}
				if !ok {
					return fmt.Errorf("pairing revoke: %s sender %s on account %s was not approved", args[0], args[2], args[1])
				}
				fmt.Fprintf(env.out, "revoked %s sender %s on account %s\n", args[0], args[2], args[1])
				return nil
			})
		},
	}
}

// revokeThroughDaemon revokes through the running daemon's API when one
// answers (done true): the daemon then asks again the messages it holds
// queued from that sender, which a revoke in the pairing state alone
// leaves to run (the console's revoke does the same). With no daemon it
// returns done false and the caller revokes in the state directly.
func revokeThroughDaemon(cmd *cobra.Command, cfgPath, channel, account, sender string) (done bool, err error) {
	err = withConfig(cmd, cfgPath, func(env *cliEnv) error {
		dc := newDaemonClient(env.cfg)
		if dc == nil || !dc.alive(env.ctx) {
			return nil
		}
		done = true
		err := dc.do(env.ctx, http.MethodPost, "/api/pairing/"+url.PathEscape(channel)+"/revoke",
			map[string]string{"accountId": account, "senderId": sender}, nil)
		switch {
		case isAPIStatus(err, http.StatusNotFound):
			return fmt.Errorf("pairing revoke: %s sender %s on account %s was not approved", channel, sender, account)
		case err != nil:
			return fmt.Errorf("pairing revoke: %w", err)
		}
		fmt.Fprintf(env.out, "revoked %s sender %s on account %s (through the running daemon: its queued messages from them are dropped)\n", channel, sender, account)
		return nil
	})
	return done, err
}

// pairingChannel spells a CHANNEL argument as the pairing state names it
// (lower case); a name no channel pairs under is a usage error naming
// those that do, not an empty list (nor a lock file left for the typo).
func pairingChannel(arg string) (string, error) {
	ch := strings.ToLower(strings.TrimSpace(arg))
	names := gatewayd.PairingChannels()
	if !slices.Contains(names, ch) {
		return "", usage("pairing: channel %q: want one of %s", arg, strings.Join(names, ", "))
	}
	return ch, nil
}
