package main

import (
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
)

// openPairing opens the pairing store shared by every policy generation.
func openPairingStore(cfg *configs.Config, log *zap.Logger) (*access.PairingStore, error) {
	st, err := access.OpenPairingStore(filepath.Join(cfg.StateDir, "pairing"), access.StoreOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("gateway: pairing store: %w", err)
	}
	return st, nil
}

// accessPolicy builds the access policy of every channel account in cfg.
func accessPolicy(cfg *configs.Config, store *access.PairingStore, log *zap.Logger) (*access.Policy, error) {
	accounts := map[access.Account]access.Config{}
	for name, a := range cfg.Channels.Telegram.Accounts {
		accounts[access.Account{Channel: "telegram", AccountID: name}] = a.Access()
	}
	for name, a := range cfg.Channels.Discord.Accounts {
		ac := a.Access()
		ac.GroupsKey = "guilds"
		accounts[access.Account{Channel: "discord", AccountID: name}] = ac
	}
	return access.New(accounts, access.Options{Store: store, Logger: log, Owners: cfg.Commands.Owners})
}

// accessFunc adapts a policy to the dispatcher. The web channel is reached
// only through the (token-protected when public) HTTP API: it is allowed.
func accessFunc(p *access.Policy) func(in channels.Inbound) dispatch.Verdict {
	return func(in channels.Inbound) dispatch.Verdict {
		if in.Channel == web.Name {
			return dispatch.Verdict{Allow: true, Privileged: true}
		}
		d := p.Check(in)
		if !d.Allowed() {
			return dispatch.Verdict{Reply: d.Reply, Reason: d.Reason, Unaddressed: d.Reason == access.ReasonNotMentioned}
		}
		return dispatch.Verdict{Allow: true, Privileged: p.Privileged(in)}
	}
}

// roomFunc adapts a policy's room settings to the dispatcher. Web chats
// have no room configuration.
func roomFunc(p *access.Policy) func(in channels.Inbound) channels.Room {
	return func(in channels.Inbound) channels.Room {
		if in.Channel == web.Name {
			return channels.DefaultRoom(in.Channel)
		}
		return p.Room(in)
	}
}
