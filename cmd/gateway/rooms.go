package main

// roomFunc reads the account-level streaming key of this branch; the
// per-room configuration (roomFunc(policy)) supersedes it: on merging,
// delete this file (see channels/streaming_config.go).

import (
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
)

// roomFunc is dispatch.Runtime.Room for cfg: the channel defaults with
// each account's streaming mode. (Per-group/topic/guild/channel settings
// layer on top of it.)
func roomFunc(cfg *configs.Config) func(in channels.Inbound) channels.Room {
	modes := map[string]string{}
	for id, a := range cfg.Channels.Telegram.Accounts {
		modes["telegram/"+id] = a.Streaming.ModeOrDefault()
	}
	for id, a := range cfg.Channels.Discord.Accounts {
		modes["discord/"+id] = a.Streaming.ModeOrDefault()
	}
	return func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		if m, ok := modes[in.Channel+"/"+in.AccountID]; ok {
			r.Streaming = m
		}
		return r
	}
}
