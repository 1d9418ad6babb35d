package access

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Telegram and Discord name senders and rooms by number (a Telegram user
// or chat id, a Discord snowflake). An allowFrom entry written as a
// username ("@alice", "alice") or with a prefix of no channel ("user:1")
// can never match a sender: it used to load without a word and refuse the
// very person it was written for. CheckIDs makes it an error naming the
// key, as SPEC §9 wants of an invalid value. "tg:" is read as "telegram:"
// (the form OpenClaw's configs use).

// idChannels are the channel names an allowFrom entry's prefix may carry;
// an entry prefixed with another channel than the account's is that
// channel's (a list shared between accounts through a YAML anchor) and is
// left out here as it is by the policy.
var idChannels = []string{"telegram", "tg", "discord", "web"}

// idRule is what a number looks like on one channel.
type idRule struct {
	platform string
	signed   bool   // Telegram chat ids (groups, channels posting) are negative
	hint     string // how to learn one's id there
}

var idRules = map[string]idRule{
	"telegram": {platform: "Telegram", signed: true, hint: "message @userinfobot to learn a user's"},
	"discord":  {platform: "Discord", hint: "Developer Mode, then Copy User ID"},
}

// CheckIDs checks that every allowFrom entry of c (the account's, and its
// groups', topics' and channels') and every group, topic and channel key
// can name a sender or a room of channel; channels without numeric ids
// are not checked. Errors name the key relative to the account.
func (c Config) CheckIDs(channel string) error {
	rule, ok := idRules[channel]
	if !ok {
		return nil
	}
	c = c.WithDefaults()
	if err := rule.checkList(channel, "allowFrom", c.AllowFrom); err != nil {
		return err
	}
	// Group (chat) ids are signed on Telegram; topics and channels are not.
	return rule.checkRules(channel, c.GroupsKey, c.Groups, rule.signed)
}

// checkRules checks the keys of rules (under key) and what each rule holds.
func (r idRule) checkRules(channel, key string, rules map[string]GroupRule, signed bool) error {
	for _, id := range slices.Sorted(maps.Keys(rules)) {
		if t := strings.TrimSpace(id); t != Wildcard && !isNumber(t, signed) {
			return fmt.Errorf("%s: %q is not a %s id (a number, or \"*\")", key, id, r.platform)
		}
		path, g := key+"."+id, rules[id]
		if err := r.checkList(channel, path+".allowFrom", g.AllowFrom); err != nil {
			return err
		}
		if err := r.checkRules(channel, path+".topics", g.Topics, false); err != nil {
			return err
		}
		if err := r.checkRules(channel, path+".channels", g.Channels, false); err != nil {
			return err
		}
	}
	return nil
}

func (r idRule) checkList(channel, key string, list []string) error {
	for i, e := range list {
		id := normalizeEntry(channel, e)
		if id == Wildcard || isNumber(id, r.signed) {
			continue
		}
		if p, _, ok := strings.Cut(id, ":"); ok && isWord(p) && otherChannel(p, channel) {
			continue // another channel's entry
		}
		return fmt.Errorf("%s[%d]: %q is not a %s user id: allowFrom takes numeric ids, never usernames (%s)",
			key, i, e, r.platform, r.hint)
	}
	return nil
}

// otherChannel reports whether prefix names a channel other than channel.
func otherChannel(prefix, channel string) bool {
	for _, ch := range idChannels {
		if strings.EqualFold(prefix, ch) {
			return !sameChannel(prefix, channel)
		}
	}
	return false
}

// sameChannel reports whether an entry's prefix names channel ("tg" is
// Telegram's short name).
func sameChannel(prefix, channel string) bool {
	return strings.EqualFold(prefix, channel) || (channel == "telegram" && strings.EqualFold(prefix, "tg"))
}

// isNumber reports whether s is a decimal integer (with a leading '-'
// when signed).
func isNumber(s string, signed bool) bool {
	if signed {
		s = strings.TrimPrefix(s, "-")
	}
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// CheckOwner checks a commands.owners entry: one that names Telegram or
// Discord ("telegram:123", "tg:123", "discord:<@123>") must name a user by
// number, as allowFrom entries do; a bare entry may name a sender of any
// channel (a web sender's id is no number) and is not checked.
func CheckOwner(entry string) error {
	p, _, ok := strings.Cut(strings.TrimSpace(entry), ":")
	if !ok || !isWord(p) {
		return nil
	}
	for channel, rule := range idRules {
		if !sameChannel(p, channel) {
			continue
		}
		if id := normalizeEntry(channel, entry); !isNumber(id, rule.signed) {
			return fmt.Errorf("%q is not a %s user id: owners are named by numeric ids, never usernames (%s)", entry, rule.platform, rule.hint)
		}
	}
	return nil
}
