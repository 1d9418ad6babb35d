package access

import (
	"fmt"
	"slices"
	"sort"
	"strings"
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
	for _, id := range ids {
		if strings.TrimSpace(id) == "" {
			return fmt.Errorf("%s: empty group id", c.GroupsKey)
		}
		if err := validateList(c.GroupsKey+"."+id+".allowFrom", c.Groups[id].AllowFrom); err != nil {
			return err
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
// space and strips a "<channel>:" prefix (when channel is empty, any
// alphabetic prefix) and Discord's "<@id>" / "<@!id>" mention form.
func normalizeEntry(channel, e string) string {
	e = strings.TrimSpace(e)
	if e == Wildcard {
		return e
	}
	if p, rest, ok := strings.Cut(e, ":"); ok && isWord(p) && (channel == "" || strings.EqualFold(p, channel)) {
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

// groupKeys lists the rule keys that apply to a message, most specific first.
func groupKeys(threadID, chatID, parentID, guildID string) []string {
	keys := make([]string, 0, 5)
	for _, k := range []string{threadID, chatID, parentID, guildID, Wildcard} {
		if k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}
