package access

import (
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Outcome is the kind of a Decision.
type Outcome int

// Outcomes.
const (
	// Allow lets the message through to routing and the agent.
	Allow Outcome = iota + 1
	// Deny refuses the message; Decision.Reason says why.
	Deny
	// Pair refuses the message and asks the adapter to send Decision.Reply
	// (the pairing code) to the sender.
	Pair
)

func (o Outcome) String() string {
	switch o {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Pair:
		return "pair"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Deny reasons (stable, snake_case; used in logs and metrics).
const (
	ReasonDMDisabled      = "dm_disabled"
	ReasonNotAllowlisted  = "not_allowlisted"
	ReasonPairingPending  = "pairing_pending"
	ReasonPairingFull     = "pairing_full"
	ReasonPairingError    = "pairing_error"
	ReasonPairingCode     = "pairing_code_sent"
	ReasonGroupDisabled   = "group_disabled"
	ReasonGroupNotAllowed = "group_not_allowed"
	ReasonSenderNotListed = "sender_not_allowed"
	ReasonNotMentioned    = "not_mentioned"
	ReasonNoSender        = "no_sender"
)

// Decision is the policy's answer for one inbound message.
type Decision struct {
	Outcome Outcome
	// Reason is empty for Allow.
	Reason string
	// Code is the pairing code (Pair only).
	Code string
	// Reply is the text to send back to the sender (Pair only); it never
	// contains anything but the code and the approval command.
	Reply string
}

// Allowed reports whether the message may reach an agent.
func (d Decision) Allowed() bool { return d.Outcome == Allow }

// Account names one channel account.
type Account struct {
	Channel   string
	AccountID string
}

// Options configures a Policy.
type Options struct {
	// Store holds pairing requests and approvals; nil refuses unknown DM
	// senders under dmPolicy pairing without a code.
	Store  *PairingStore
	Logger *zap.Logger
	// Owners may run privileged commands (/new, /reset, /switch, /delete)
	// in any group the bot admits them in (commands.owners): "channel:id",
	// or a bare id for every channel.
	Owners []string
	// PlatformAdmins lets a group's administrators on the platform run the
	// privileged commands there too (commands.platformAdmins): AskPlatform
	// reports the messages for which the caller should ask the adapter.
	PlatformAdmins bool
}

// Policy decides on inbound messages. It is immutable after New and safe
// for concurrent use; its PairingStore is shared across reloads.
type Policy struct {
	accounts map[Account]*compiled
	fallback *compiled // for accounts without config
	store    *PairingStore
	owners   []string // commands.owners, as configured
	admins   bool     // commands.platformAdmins
	log      *zap.Logger
}

type compiled struct {
	cfg       Config
	allowFrom idSet
	groups    map[string]compiledRule
}

type compiledRule struct {
	rule      GroupRule
	allowFrom idSet
}

// New validates every account's configuration and builds a Policy.
// Messages of accounts that have no entry get the defaults (pairing DMs,
// allowlisted groups with none listed).
func New(accounts map[Account]Config, opts Options) (*Policy, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	p := &Policy{accounts: map[Account]*compiled{}, fallback: compile("", Config{}), store: opts.Store, log: opts.Logger,
		owners: opts.Owners, admins: opts.PlatformAdmins}
	keys := make([]Account, 0, len(accounts))
	for k := range accounts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Channel != keys[j].Channel {
			return keys[i].Channel < keys[j].Channel
		}
		return keys[i].AccountID < keys[j].AccountID
	})
	for _, k := range keys {
		cfg := accounts[k]
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("access: channels.%s.accounts.%s.%w", k.Channel, k.AccountID, err)
		}
		p.accounts[k] = compile(k.Channel, cfg)
	}
	return p, nil
}

func compile(channel string, cfg Config) *compiled {
	cfg = cfg.WithDefaults()
	c := &compiled{cfg: cfg, allowFrom: newIDSet(channel, cfg.AllowFrom), groups: map[string]compiledRule{}}
	for id, r := range cfg.Groups {
		id = normalizeEntry("", id)
		c.groups[id] = compiledRule{rule: r, allowFrom: newIDSet(channel, r.AllowFrom)}
		for tid, t := range r.Topics {
			c.groups[topicKey(id, normalizeEntry("", tid))] = compiledRule{rule: t, allowFrom: newIDSet(channel, t.AllowFrom)}
		}
		for cid, ch := range r.Channels {
			c.groups[normalizeEntry("", cid)] = compiledRule{rule: ch, allowFrom: newIDSet(channel, ch.AllowFrom)}
		}
	}
	return c
}

func (p *Policy) account(in channels.Inbound) *compiled {
	if c, ok := p.accounts[Account{in.Channel, in.AccountID}]; ok {
		return c
	}
	return p.fallback
}

// resolved is the merged group rule for one message.
type resolved struct {
	matched        bool
	allow          bool
	requireMention bool
	allowFrom      idSet
}

func (c *compiled) group(in channels.Inbound) resolved {
	r := resolved{allow: true, requireMention: true}
	if c.cfg.RequireMention != nil {
		r.requireMention = *c.cfg.RequireMention
	}
	var allowSet, mentionSet, fromSet bool
	for _, k := range groupKeys(in) {
		cr, ok := c.groups[k]
		if !ok {
			continue
		}
		r.matched = true
		if a := cr.rule.allowed(); !allowSet && a != nil {
			r.allow, allowSet = *a, true
		}
		if !mentionSet && cr.rule.RequireMention != nil {
			r.requireMention, mentionSet = *cr.rule.RequireMention, true
		}
		if !fromSet && !cr.allowFrom.empty() {
			r.allowFrom, fromSet = cr.allowFrom, true
		}
	}
	return r
}

// dmByPolicy decides direct message in by the account's dmPolicy alone:
// done is false under pairing or allowlist for a sender, who is then
// looked up in the lists.
func (c *compiled) dmByPolicy(in channels.Inbound) (d Decision, done bool) {
	if in.SenderID == "" {
		return deny(ReasonNoSender), true
	}
	switch c.cfg.DMPolicy {
	case DMDisabled:
		return deny(ReasonDMDisabled), true
	case DMOpen:
		return Decision{Outcome: Allow}, true
	}
	return Decision{}, false
}

// Check decides on in. Under dmPolicy pairing a message of an unknown
// sender may create a pairing request in the store (the only side
// effect); an event (an edit, a reaction) is no request for access and
// creates none: it gets no answer, so its code would reach nobody and the
// sender's next message would be refused as pending, without a code.
func (p *Policy) Check(in channels.Inbound) Decision {
	c := p.account(in)
	if in.ChatType != channels.Direct {
		return c.checkGroup(in)
	}
	if d, done := c.dmByPolicy(in); done {
		return d
	}
	if p.listed(c, in) {
		return Decision{Outcome: Allow}
	}
	if c.cfg.DMPolicy == DMAllowlist || p.store == nil || in.Event != nil {
		return deny(ReasonNotAllowlisted)
	}
	req, created, err := p.store.Request(in.Channel, in.AccountID, in.SenderID, in.SenderName, in.ChatID, in.CaseSensitive)
	switch {
	case errors.Is(err, ErrPairingFull):
		return deny(ReasonPairingFull)
	case err != nil:
		p.log.Warn("pairing request failed", zap.String("channel", in.Channel), zap.Error(err))
		return deny(ReasonPairingError)
	case !created:
		return deny(ReasonPairingPending)
	}
	return Decision{Outcome: Pair, Reason: ReasonPairingCode, Code: req.Code, Reply: PairingReply(in.Channel, req.Code)}
}

// PairingReply is the text sent to an unknown DM sender with its code.
func PairingReply(channel, code string) string {
	return "This bot only talks to people its operator has approved.\n" +
		"Your pairing code: " + code + " (valid for 1 hour)\n" +
		"Ask the operator to run: gateway pairing approve " + channel + " " + code
}

func deny(reason string) Decision { return Decision{Outcome: Deny, Reason: reason} }

// listed reports whether the sender is in allowFrom or approved.
func (p *Policy) listed(c *compiled, in channels.Inbound) bool {
	if c.allowFrom.has(in.SenderID, in.CaseSensitive) {
		return true
	}
	if p.store == nil || in.SenderID == "" {
		return false
	}
	ok, err := p.store.IsApproved(in.Channel, in.AccountID, in.SenderID, in.CaseSensitive)
	if err != nil {
		p.log.Warn("pairing store read failed", zap.String("channel", in.Channel), zap.Error(err))
	}
	return ok
}

// Admits is Check asked again of a message accepted earlier, before it
// reaches an agent (a hot reload may have changed the policy since): does
// the policy in force admit its sender and its room? Mention gating is left
// out (the message was addressed when it came), and it has no side effects:
// an unknown DM sender under dmPolicy pairing is refused without a pairing
// request. A failed read of the pairing store admits: the message was
// admitted when it came and is not dropped for a storage error. A group
// message without a sender (the dispatcher's ambient tick over a room's
// kept messages) is judged by its room alone.
func (p *Policy) Admits(in channels.Inbound) Decision {
	c := p.account(in)
	if in.ChatType != channels.Direct {
		if in.SenderID == "" {
			if reason := c.roomRefusal(c.group(in)); reason != "" {
				return deny(reason)
			}
			return Decision{Outcome: Allow}
		}
		return c.checkGroup(withMention(in))
	}
	if d, done := c.dmByPolicy(in); done {
		return d
	}
	if c.allowFrom.has(in.SenderID, in.CaseSensitive) {
		return Decision{Outcome: Allow}
	}
	if p.store == nil {
		return deny(ReasonNotAllowlisted)
	}
	ok, err := p.store.IsApproved(in.Channel, in.AccountID, in.SenderID, in.CaseSensitive)
	if err != nil {
		// Admitted when it came, and the store cannot say otherwise now:
		// a message is not dropped for a failed read.
		p.log.Warn("pairing store read failed; the message keeps its admission", zap.String("channel", in.Channel), zap.Error(err))
		return Decision{Outcome: Allow}
	}
	if ok {
		return Decision{Outcome: Allow}
	}
	return deny(ReasonNotAllowlisted)
}

// roomRefusal is why the account refuses the room g was resolved for
// ("" when it admits it): the group policy and the room's own rule.
func (c *compiled) roomRefusal(g resolved) string {
	if c.cfg.GroupPolicy == GroupDisabled {
		return ReasonGroupDisabled
	}
	if !g.allow || (c.cfg.GroupPolicy == GroupAllowlist && !g.matched) {
		return ReasonGroupNotAllowed
	}
	return ""
}

func (c *compiled) checkGroup(in channels.Inbound) Decision {
	g := c.group(in)
	if reason := c.roomRefusal(g); reason != "" {
		return deny(reason)
	}
	if !g.allowFrom.empty() && !g.allowFrom.has(in.SenderID, in.CaseSensitive) {
		return deny(ReasonSenderNotListed)
	}
	if g.requireMention && !in.Mentioned {
		return deny(ReasonNotMentioned)
	}
	return Decision{Outcome: Allow}
}

// MentionRequired reports whether a group message needs a mention of the
// bot to be admitted (false for DMs). The assembler hands adapters a
// function over it, so they drop unmentioned group messages early.
func (p *Policy) MentionRequired(in channels.Inbound) bool {
	return p.account(in).mentionRequired(in)
}

// MentionRequired is Policy.MentionRequired for a single account's
// configuration alone, without building a Policy.
func (c Config) MentionRequired(in channels.Inbound) bool {
	return compile(in.Channel, c).mentionRequired(in)
}

func (c *compiled) mentionRequired(in channels.Inbound) bool {
	if in.ChatType == channels.Direct {
		return false
	}
	return c.group(in).requireMention
}

// Privileged reports whether the sender of in may run /new, /reset,
// /switch and /delete. In DMs any admitted sender may. In groups the
// session is shared: only senders listed in that group's own rule
// (allowFrom) or in commands.owners may; approval for DMs (pairing or the
// account's allowFrom) grants nothing there. With platformAdmins the room's
// administrators on the platform may too, which only the adapter can tell
// (AskPlatform). It has no side effects.
func (p *Policy) Privileged(in channels.Inbound) bool {
	c := p.account(in)
	if in.SenderID == "" {
		return false
	}
	if in.ChatType == channels.Direct {
		switch c.cfg.DMPolicy {
		case DMDisabled:
			return false
		case DMOpen:
			return true
		}
		return p.listed(c, in)
	}
	if c.checkGroup(withMention(in)).Outcome != Allow {
		return false
	}
	if g := c.group(in); !g.allowFrom.empty() && g.allowFrom.has(in.SenderID, in.CaseSensitive) {
		return true
	}
	return len(p.owners) > 0 && newIDSet(in.Channel, p.owners).has(in.SenderID, in.CaseSensitive)
}

// AskPlatform reports whether the sender of in, not Privileged, would be
// if the platform says they administer the room (a Telegram chat
// administrator, a Discord member who may manage the channel or server):
// platformAdmins is on, in is a group message, and its sender is admitted
// there. The policy makes no platform request; the caller asks the room's
// adapter (channels.AdminChecker), and only for a privileged command. It
// has no side effects.
func (p *Policy) AskPlatform(in channels.Inbound) bool {
	if !p.admins || in.ChatType == channels.Direct || in.SenderID == "" {
		return false
	}
	if p.account(in).checkGroup(withMention(in)).Outcome != Allow {
		return false
	}
	return !p.Privileged(in)
}

func withMention(in channels.Inbound) channels.Inbound {
	in.Mentioned = true
	return in
}
