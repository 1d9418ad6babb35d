package access

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gateway/gateway/channels"
)

// DMPolicy says who may talk to the bot in direct messages.
type DMPolicy string

// DM policies.
const (
	// DMPairing admits allowFrom and approved senders; an unknown sender
	// gets a one-time pairing code and nothing else (the default).
	DMPairing DMPolicy = "pairing"
	// DMAllowlist admits allowFrom and approved senders only, silently.
	DMAllowlist DMPolicy = "allowlist"
	// DMOpen admits every sender.
	DMOpen DMPolicy = "open"
	// DMDisabled refuses every direct message.
	DMDisabled DMPolicy = "disabled"
)

// GroupPolicy says which groups (Telegram groups, Discord guild channels)
// the bot answers in.
type GroupPolicy string

// Group policies.
const (
	// GroupAllowlist admits only groups that a rule lists (the default).
	GroupAllowlist GroupPolicy = "allowlist"
	// GroupOpen admits every group unless a rule says allow: false.
	GroupOpen GroupPolicy = "open"
	// GroupDisabled refuses every group message.
	GroupDisabled GroupPolicy = "disabled"
)

// Wildcard is the allowFrom entry and group key that matches anything.
const Wildcard = "*"

// GroupRule configures one group, guild, channel or thread (or "*").
type GroupRule struct {
	// Allow false blocks the group; nil or true admits it.
	Allow *bool `mapstructure:"allow" json:"allow,omitempty"`
	// RequireMention overrides the account's requireMention here.
	RequireMention *bool `mapstructure:"requireMention" json:"requireMention,omitempty"`
	// AllowFrom, when not empty, lists the only senders admitted here.
	AllowFrom []string `mapstructure:"allowFrom" json:"allowFrom,omitempty"`
	// Enabled false silences the bot here (nothing reaches an agent, no
	// history is kept); it is the same switch as Allow, under the name
	// the room settings use.
	Enabled *bool `mapstructure:"enabled" json:"enabled,omitempty"`
	// RoomConfig is how the bot behaves here (agent, prompt, history,
	// streaming, errors, reply threading, ack reaction); read by
	// Policy.Room.
	channels.RoomConfig `mapstructure:",squash"`
	// Topics holds Telegram forum topics of this group by topic id; their
	// rules refine the group's.
	Topics map[string]GroupRule `mapstructure:"topics" json:"topics,omitempty"`
	// Channels holds Discord channels (and threads) of this guild by id;
	// their rules refine the guild's.
	Channels map[string]GroupRule `mapstructure:"channels" json:"channels,omitempty"`
}

// allowed merges Allow and Enabled: nil when neither is set.
func (r GroupRule) allowed() *bool {
	if r.Enabled != nil && r.Allow != nil {
		v := *r.Enabled && *r.Allow
		return &v
	}
	if r.Enabled != nil {
		return r.Enabled
	}
	return r.Allow
}

// Config is the access configuration of one channel account. The zero
// value is valid and means pairing for DMs, allowlist (nothing listed) for
// groups, mention required.
type Config struct {
	DMPolicy    DMPolicy             `mapstructure:"dmPolicy" json:"dmPolicy,omitempty"`
	AllowFrom   []string             `mapstructure:"allowFrom" json:"allowFrom,omitempty"`
	GroupPolicy GroupPolicy          `mapstructure:"groupPolicy" json:"groupPolicy,omitempty"`
	Groups      map[string]GroupRule `mapstructure:"groups" json:"groups,omitempty"`
	// RequireMention gates group messages on a mention of the bot (or a
	// reply to it); nil means true.
	RequireMention *bool `mapstructure:"requireMention" json:"requireMention,omitempty"`
	// Room holds the account's defaults for every room (historyLimit,
	// streaming, errorPolicy, replyToMode, ackReaction); groups, topics
	// and channels refine them.
	// They sit at the account's level in the YAML (squashed).
	Room channels.RoomDefaults `mapstructure:",squash" json:"room,omitempty"`
	// InheritParent is what a new thread's or topic's session takes from
	// the parent's (Discord thread.inheritParent: digest or fork).
	InheritParent channels.Inherit `mapstructure:"-" json:"inheritParent,omitempty"`
	// GroupsKey names the Groups field in error messages ("groups" when
	// empty; Discord calls it "guilds").
	GroupsKey string `mapstructure:"-" json:"-"`
}

// WithDefaults returns c with empty policies replaced by their defaults.
func (c Config) WithDefaults() Config {
	if c.DMPolicy == "" {
		c.DMPolicy = DMPairing
	}
	if c.GroupPolicy == "" {
		c.GroupPolicy = GroupAllowlist
	}
	if c.GroupsKey == "" {
		c.GroupsKey = "groups"
	}
	return c
}

// Validate checks c and names the offending key, relative to the account
// ("dmPolicy: ...", "groups.123.allowFrom[0]: ...").
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch c.DMPolicy {
	case DMPairing, DMAllowlist, DMOpen, DMDisabled:
	default:
		return fmt.Errorf("dmPolicy: %q is not pairing, allowlist, open or disabled", c.DMPolicy)
	}
	switch c.GroupPolicy {
	case GroupAllowlist, GroupOpen, GroupDisabled:
	default:
		return fmt.Errorf("groupPolicy: %q is not allowlist, open or disabled", c.GroupPolicy)
	}
	if err := validateList("allowFrom", c.AllowFrom); err != nil {
		return err
	}
	ids := make([]string, 0, len(c.Groups))
	for id := range c.Groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if err := c.Room.Validate(""); err != nil {
		return err
	}
	if err := c.InheritParent.Validate(); err != nil {
		return fmt.Errorf("thread.inheritParent: %w", err)
	}
	seen := map[string]string{}
	for _, id := range ids {
		if strings.TrimSpace(id) == "" {
			return fmt.Errorf("%s: empty group id", c.GroupsKey)
		}
		r := c.Groups[id]
		if c.GroupsKey == "guilds" && len(r.Topics) > 0 {
			return fmt.Errorf("guilds.%s.topics: Discord has no topics (threads are channels: use channels)", id)
		}
		if c.GroupsKey != "guilds" && len(r.Channels) > 0 {
			return fmt.Errorf("%s.%s.channels: Telegram groups have topics, not channels", c.GroupsKey, id)
		}
		if err := validateRule(c.GroupsKey+"."+id, id, r, 0, seen); err != nil {
			return err
		}
	}
	return nil
}

// validateRule checks one group/topic/channel rule at path and the rules
// nested in it. seen catches a Discord channel id configured twice (as a
// key of guilds and under a guild's channels, or under two guilds).
func validateRule(path, id string, r GroupRule, depth int, seen map[string]string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("%s: empty id", path)
	}
	if err := validateList(path+".allowFrom", r.AllowFrom); err != nil {
		return err
	}
	if err := r.RoomConfig.Validate(path + "."); err != nil {
		return err
	}
	if depth > 0 && (len(r.Topics) > 0 || len(r.Channels) > 0) {
		return fmt.Errorf("%s: topics and channels nest one level only", path)
	}
	for _, sub := range []struct {
		key   string
		rules map[string]GroupRule
	}{{"topics", r.Topics}, {"channels", r.Channels}} {
		keys := make([]string, 0, len(sub.rules))
		for k := range sub.rules {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "." + sub.key + "." + k
			if sub.key == "channels" {
				if prev, dup := seen[k]; dup {
					return fmt.Errorf("%s: channel %s is already configured at %s", p, k, prev)
				}
				seen[k] = p
			}
			if err := validateRule(p, k, sub.rules[k], depth+1, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateList(key string, list []string) error {
	for i, e := range list {
		if normalizeEntry("", e) == "" {
			return fmt.Errorf("%s[%d]: %q is not a sender id", key, i, e)
		}
	}
	return nil
}

// normalizeEntry turns an allowFrom entry into a bare sender id: it trims
// space and strips a "<channel>:" prefix ("tg:" for telegram; when channel
// is empty, any alphabetic prefix) and Discord's "<@id>" / "<@!id>"
// mention form.
func normalizeEntry(channel, e string) string {
	e = strings.TrimSpace(e)
	if e == Wildcard {
		return e
	}
	if p, rest, ok := strings.Cut(e, ":"); ok && isWord(p) && (channel == "" || sameChannel(p, channel)) {
		e = strings.TrimSpace(rest)
	}
	if strings.HasPrefix(e, "<@") && strings.HasSuffix(e, ">") {
		e = strings.TrimPrefix(strings.TrimSuffix(e[2:], ">"), "!")
	}
	if strings.ContainsAny(e, " \t\r\n") {
		return ""
	}
	return e
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

// idSet is a set of sender ids that answers case-sensitive and
// case-insensitive lookups.
type idSet struct {
	any   bool
	exact map[string]struct{}
	lower map[string]struct{}
}

func newIDSet(channel string, list []string) idSet {
	s := idSet{exact: map[string]struct{}{}, lower: map[string]struct{}{}}
	for _, e := range list {
		id := normalizeEntry(channel, e)
		switch id {
		case "":
		case Wildcard:
			s.any = true
		default:
			s.exact[id] = struct{}{}
			s.lower[strings.ToLower(id)] = struct{}{}
		}
	}
	return s
}

func (s idSet) empty() bool { return !s.any && len(s.exact) == 0 }

// has reports whether id is in s; "*" matches any non-empty id.
func (s idSet) has(id string, caseSensitive bool) bool {
	if id == "" {
		return false
	}
	if s.any {
		return true
	}
	if caseSensitive {
		_, ok := s.exact[id]
		return ok
	}
	_, ok := s.lower[strings.ToLower(id)]
	return ok
}

// sameSender compares two sender ids.
func sameSender(a, b string, caseSensitive bool) bool {
	if caseSensitive {
		return a == b
	}
	return strings.EqualFold(a, b)
}

// topicKey is the compiled key of a Telegram forum topic's rule.
func topicKey(chatID, topicID string) string { return chatID + "/topic/" + topicID }

// groupKeys lists the rule keys that apply to a message, most specific
// first. Telegram topic ids are small numbers reused by every forum, so a
// topic matches only under its own group (groups.<chat>.topics.<id>);
// Discord ids are unique across guilds, channels and threads.
func groupKeys(in channels.Inbound) []string {
	if in.Channel == "telegram" {
		keys := make([]string, 0, 4)
		if in.ThreadID != "" {
			keys = append(keys, topicKey(in.ChatID, in.ThreadID), topicKey(Wildcard, in.ThreadID))
		}
		return append(keys, in.ChatID, Wildcard)
	}
	keys := make([]string, 0, 5)
	for _, k := range []string{in.ThreadID, in.ChatID, in.ParentChatID, in.GuildID, Wildcard} {
		if k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}
