package openclaw

import (
	"cmp"
	"regexp"
	"strings"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The rooms of OpenClaw's delivery targets: which the gateway can address
// (a Telegram chat, group or forum topic by id, of an account the config
// serves) and the session key its routing gives them.

// channelPrefix names the channel of a target written "telegram:…".
var channelPrefix = regexp.MustCompile(`(?i)^(telegram|tg|discord):`)

// target reads an OpenClaw delivery target into a room of a channel
// account the gateway serves.
func target(channel, to, account, thread string, o JobOptions) (sessions.JobTarget, *skip) {
	channel = channelOf(channel, to)
	var t sessions.JobTarget
	switch channel {
	case "telegram":
		var sk *skip
		if t, sk = telegramTarget(to, thread); sk != nil {
			return t, sk
		}
	case "discord":
		return t, &skip{"channel=discord", "a Discord target names a user or a channel id without its guild or thread parent, which the gateway keys Discord rooms by: not imported (add it with `gateway jobs add --session`)", ""}
	case "":
		return t, &skip{"delivery.noChannel", "a delivery target without a channel: not imported", ""}
	default:
		return t, &skip{"channel=" + channel, "a room of a channel the gateway does not serve: not imported", ""}
	}
	t.AccountID = strings.ToLower(cmp.Or(account, "default"))
	if o.Serves != nil && !o.Serves(t.Channel, t.AccountID) {
		return t, &skip{"accountNotServed", "a room of a channel account this config does not serve: not imported; configure the account and import again (a second import adds what the first skipped)", t.Channel + "/" + t.AccountID}
	}
	return t, nil
}

var (
	tgTopic  = regexp.MustCompile(`^(.+?):topic:(\d+)$`)
	tgThread = regexp.MustCompile(`^(.+):(\d+)$`)
	tgChatID = regexp.MustCompile(`^-?\d{1,32}$`)
)

// telegramTarget reads a Telegram target as OpenClaw writes it
// ("telegram:-100…:topic:7", "tg:555", "-100…:7", "555"): a negative chat
// id is a group (with a thread, a forum topic), a positive one a user's
// private chat. thread, when set, names the topic.
func telegramTarget(to, thread string) (sessions.JobTarget, *skip) {
	s, prefixed := strings.TrimSpace(to), false
	for {
		l := strings.ToLower(s)
		switch {
		case strings.HasPrefix(l, "telegram:"):
			s, prefixed = strings.TrimSpace(s[len("telegram:"):]), true
			continue
		case strings.HasPrefix(l, "tg:"):
			s, prefixed = strings.TrimSpace(s[len("tg:"):]), true
			continue
		case prefixed && strings.HasPrefix(l, "group:"):
			s = strings.TrimSpace(s[len("group:"):])
			continue
		}
		break
	}
	chat, topic := s, ""
	if m := tgTopic.FindStringSubmatch(s); m != nil {
		chat, topic = m[1], m[2]
	} else if m := tgThread.FindStringSubmatch(s); m != nil {
		chat, topic = m[1], m[2]
	}
	if thread != "" {
		topic = thread
	}
	if !tgChatID.MatchString(chat) {
		return sessions.JobTarget{}, &skip{"telegram.notAnID", "a Telegram target by @username or link: the gateway addresses chats by id; not imported", to}
	}
	t := sessions.JobTarget{Channel: "telegram", ChatID: chat, ChatType: string(routing.Direct)}
	if strings.HasPrefix(chat, "-") {
		t.ChatType = string(routing.Group)
	}
	if topic != "" {
		t.ThreadID, t.IsTopic = topic, t.ChatType == string(routing.Group)
	}
	return t, nil
}

// roomKey is the session key the gateway's routing gives room t for
// agent: rc's dmScope and identity links, no bindings (the job keeps its
// agent).
func roomKey(agent string, t sessions.JobTarget, rc routing.Config) (string, error) {
	rc.DefaultAgent, rc.Bindings = agent, nil
	r, err := routing.NewResolver(rc)
	if err != nil {
		return "", err
	}
	in := routing.Input{Channel: t.Channel, AccountID: t.AccountID, Kind: routing.PeerKind(t.ChatType), PeerID: t.ChatID, ThreadID: t.ThreadID}
	if t.ThreadID != "" {
		in.ThreadKind = routing.Thread
		if t.IsTopic {
			in.ThreadKind = routing.Topic
		}
	}
	route, err := r.Resolve(in)
	if err != nil {
		return "", err
	}
	return route.Key.String(), nil
}
