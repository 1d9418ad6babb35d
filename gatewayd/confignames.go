package gatewayd

import (
	"fmt"
	"slices"

	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/configs"
)

// configNames is dispatch.Runtime.ConfigNames over cfg: the keys that name
// chatID of the account — a binding's peer, a Telegram account's group
// rule — spelt as in the YAML, so the operator of a group upgraded to a
// supergroup is told what to update (the daemon never rewrites the file).
func configNames(cfg *configs.Config) func(channel, accountID, chatID string) []string {
	return func(channel, accountID, chatID string) []string {
		var keys []string
		for i, b := range cfg.Bindings {
			m := b.Match
			if m.Peer == nil || m.Peer.ID != chatID || (m.Channel != "" && m.Channel != channel) ||
				(m.AccountID != "" && m.AccountID != "*" && m.AccountID != accountID) {
				continue
			}
			keys = append(keys, fmt.Sprintf("bindings[%d].match.peer.id", i))
		}
		if channel == telegram.Name {
			if acct, ok := cfg.Channels.Telegram.Accounts[accountID]; ok {
				if _, ok := acct.Rules.Groups[chatID]; ok {
					keys = append(keys, fmt.Sprintf("channels.telegram.accounts.%s.groups.%s", accountID, chatID))
				}
			}
		}
		slices.Sort(keys)
		return keys
	}
}
