package openclaw

import (
	"regexp"
	"strings"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The last route of an imported entry in the gateway's own form. OpenClaw
// writes a chat as a target ("telegram:-1001:topic:7", "channel:123");
// the gateway's entries keep the chat as its channel adapter names it
// (Entry.LastTo, DeliveryContext.To: Telegram's chat id, Discord's
// channel id) and the topic or thread apart (LastThreadID, ThreadID), and
// every send to a session's last route (the operator's, a job's, internal
// work's reply) addresses that chat as it is.

// gatewayRoute rewrites e's LastTo and DeliveryContext.To into the
// gateway's form, filling LastThreadID and DeliveryContext.ThreadID from
// the target where they are empty (and the channel from the target's
// prefix where the entry names none). A target with no faithful gateway form
// (a Discord user, a Telegram @username) is kept as it is and counted in
// rep, once per entry and form. A target in the gateway's form already is
// left as it is, so mapping an entry twice changes nothing.
func gatewayRoute(key string, e *sessions.Entry, rep *Report) {
	counted := map[string]bool{}
	norm := func(channel string, to, thread *string) {
		t, th, unmapped := gatewayTo(key, channel, *to, *thread)
		if unmapped != nil {
			if !counted[unmapped.field] {
				counted[unmapped.field] = true
				rep.add(unmapped.field, unmapped.why)
			}
			return
		}
		*to = t
		if *thread == "" {
			*thread = th
		}
	}
	dc := &e.DeliveryContext
	if e.LastChannel == "" && e.LastTo != "" {
		e.LastChannel = channelOf("", e.LastTo) // the chat's prefix is its only record of its channel
	}
	if dc.Channel == "" && dc.To != "" {
		dc.Channel = channelOf("", dc.To)
	}
	norm(e.LastChannel, &e.LastTo, &e.LastThreadID)
	norm(dc.Channel, &dc.To, &dc.ThreadID)
}

// discordTarget is OpenClaw's Discord target: an optional "discord:",
// then a kind ("channel:", "user:") and an id.
var discordTarget = regexp.MustCompile(`(?i)^(?:discord:)?(?:(channel|user):)?\s*(.*)$`)

// discordID is a Discord snowflake.
var discordID = regexp.MustCompile(`^\d{1,20}$`)

// gatewayTo is OpenClaw's target to of a chat of channel in the gateway's
// form: the chat and the thread or topic the target names (thread, when
// set, wins). unmapped says why a target with no faithful form is kept.
// A channel other than Telegram's or Discord's, or an empty target, is
// kept as it is.
func gatewayTo(key, channel, to, thread string) (chat, topic string, unmapped *skip) {
	if to == "" {
		return "", "", nil
	}
	switch channelOf(channel, to) {
	case "telegram":
		t, sk := telegramTarget(to, thread)
		if sk != nil {
			return to, "", &skip{"lastRoute.telegram.notAnID", "a session's last Telegram chat named by @username or link: the gateway addresses chats by id; kept as it is (sends to it fail until the session hears a new message)", ""}
		}
		return t.ChatID, t.ThreadID, nil
	case "discord":
		s := strings.TrimSpace(to)
		m := discordTarget.FindStringSubmatch(s)
		kind, id := strings.ToLower(m[1]), strings.TrimSpace(m[2])
		prefixed := kind != "" || strings.HasPrefix(strings.ToLower(s), "discord:")
		switch {
		case !discordID.MatchString(id):
			return to, "", &skip{"lastRoute.discord.notAnID", "a session's last Discord target that is not a channel id: kept as it is (sends to it fail until the session hears a new message)", ""}
		case kind == "channel":
			chat, topic := discordChannel(key, id)
			return chat, topic, nil
		case kind == "user":
			return to, "", &skip{"lastRoute.discord.user", "a session's last Discord target is a user (a DM): the gateway addresses a DM by its channel id, which OpenClaw does not keep; kept as it is (sends to it fail until the session hears a new message)", ""}
		case prefixed:
			return to, "", &skip{"lastRoute.discord.bareID", `a session's last Discord target "discord:<id>" does not say whether it is a user or a channel: kept as it is`, ""}
		}
		return to, "", nil // a bare id: a channel, the gateway's own form
	}
	return to, "", nil
}

// discordChannel is the chat and thread of Discord channel id in key's
// session: a thread's session (the id its key's thread) keeps its parent
// channel as the chat and the thread apart, as the adapter reports a
// thread's message; any other, the channel itself.
func discordChannel(key, id string) (chat, thread string) {
	k, err := routing.Parse(key)
	if err == nil && k.Channel == "discord" && k.ThreadKind == routing.Thread && k.Thread == id && k.Peer != "" && k.Kind != routing.Direct {
		return k.Peer, id
	}
	return id, ""
}

// channelOf is the channel of a target: channel, or where it is empty or
// "last" the one the target's prefix names ("tg" is Telegram).
func channelOf(channel, to string) string {
	channel = strings.ToLower(strings.TrimSpace(channel))
	if channel == "" || channel == "last" {
		channel = ""
		if m := channelPrefix.FindStringSubmatch(strings.TrimSpace(to)); m != nil {
			channel = strings.ToLower(m[1])
		}
	}
	if channel == "tg" {
		channel = "telegram"
	}
	return channel
}

// senderID matches OpenClaw's sender of a message (origin.from) that names
// a person: a channel prefix, an optional "user:", and a numeric id.
var senderID = regexp.MustCompile(`(?i)^(?:telegram|tg|discord):(?:user:)?(\d{1,20})$`)

// gatewayFrom is OpenClaw's origin.from as the gateway keeps a session's
// last sender (Entry.LastFrom: the bare id its channel adapter names the
// sender by, which usage rows and the usage rebuild key senders on):
// "telegram:555" is "555". OpenClaw writes a group's chat there
// ("telegram:group:-100…"), which names no sender: it is not imported
// (counted in rep), nor is any other form.
func gatewayFrom(from string, rep *Report) string {
	from = strings.TrimSpace(from)
	if from == "" {
		return ""
	}
	if m := senderID.FindStringSubmatch(from); m != nil {
		return m[1]
	}
	if numericID.MatchString(from) { // a bare user id (state.go): already the gateway's form
		return from
	}
	rep.add("entry.lastFrom.notASender", "an origin sender that names a chat or no id (a group's \"telegram:group:…\"): the last sender left empty")
	return ""
}
