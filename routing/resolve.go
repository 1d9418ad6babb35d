package routing

import (
	"fmt"
	"strings"
)

// DMScope says how direct messages map to sessions (SPEC §2).
type DMScope string

// DM scopes.
const (
	ScopeMain                  DMScope = "main"
	ScopePerPeer               DMScope = "per-peer"
	ScopePerChannelPeer        DMScope = "per-channel-peer"
	ScopePerAccountChannelPeer DMScope = "per-account-channel-peer"
	// ScopeGlobal puts DMs and groups alike in the agent's main session
	// (seed 002's "global" scope: one session for everything the agent
	// hears); a thread or topic still gets its own (main key +
	// ":thread:<id>"), so replies never cross threads.
	ScopeGlobal DMScope = "global"
)

// Input is what routing needs to know about an inbound message. The
// dispatcher fills it from the channel's normalised message.
type Input struct {
	Channel   string   // "telegram", "discord", "web"
	AccountID string   // bot account id within the channel
	Kind      PeerKind // direct, group or channel
	PeerID    string   // DM: the sender; group/channel: the chat/channel id
	GuildID   string   // Discord guild / team id, if any
	// ThreadKind and ThreadID name a thread or forum topic below PeerID.
	ThreadKind ThreadKind
	ThreadID   string
	// CaseSensitive keeps PeerID's case; otherwise it is lower-cased.
	CaseSensitive bool
}

// PeerMatch selects one conversation in a binding.
type PeerMatch struct {
	Kind PeerKind `mapstructure:"kind" json:"kind"`
	ID   string   `mapstructure:"id" json:"id"`
}

// Match is the condition of a binding. Empty fields match anything;
// AccountID "*" matches any account.
type Match struct {
	Channel   string     `mapstructure:"channel" json:"channel"`
	AccountID string     `mapstructure:"accountId" json:"accountId"`
	GuildID   string     `mapstructure:"guildId" json:"guildId"`
	Peer      *PeerMatch `mapstructure:"peer" json:"peer,omitempty"`
}

// Binding routes matching messages to an agent.
type Binding struct {
	AgentID string `mapstructure:"agentId" json:"agentId"`
	Match   Match  `mapstructure:"match" json:"match"`
}

// Config is routing's part of the configuration.
type Config struct {
	DefaultAgent string `mapstructure:"-" json:"-"`
	DMScope      DMScope
	MainKey      string
	// IdentityLinks maps a canonical peer id to "channel:peerId" aliases.
	IdentityLinks map[string][]string
	Bindings      []Binding
}

// Validate checks c and names the first bad field.
func (c Config) Validate() error {
	switch c.DMScope {
	case "", ScopeMain, ScopePerPeer, ScopePerChannelPeer, ScopePerAccountChannelPeer, ScopeGlobal:
	default:
		return fmt.Errorf("session.dmScope: %q is not main, per-peer, per-channel-peer, per-account-channel-peer or global", c.DMScope)
	}
	if c.MainKey != "" {
		if _, err := MainKey("x", c.MainKey); err != nil {
			return fmt.Errorf("session.mainKey: %w", err)
		}
	}
	for canon, aliases := range c.IdentityLinks {
		if err := checkPeer("identity link", canon); err != nil {
			return fmt.Errorf("session.identityLinks.%s: %w", canon, err)
		}
		for _, a := range aliases {
			ch, id, ok := strings.Cut(strings.TrimSpace(a), ":")
			if !ok {
				ch, id = "*", ch // a bare id: that peer on any channel
			}
			if ch == "" || strings.TrimSpace(id) == "" {
				return fmt.Errorf("session.identityLinks.%s: %q is not channel:peerId or a bare peer id", canon, a)
			}
		}
	}
	for i, b := range c.Bindings {
		if !ValidID(strings.ToLower(b.AgentID)) {
			return fmt.Errorf("bindings[%d].agentId: %q is not a valid agent id", i, b.AgentID)
		}
		if b.Match.Peer != nil {
			switch b.Match.Peer.Kind {
			case Direct, Group, Channel:
			default:
				return fmt.Errorf("bindings[%d].match.peer.kind: %q is not direct, group or channel", i, b.Match.Peer.Kind)
			}
			if strings.TrimSpace(b.Match.Peer.ID) == "" {
				return fmt.Errorf("bindings[%d].match.peer.id: empty", i)
			}
		}
	}
	return nil
}

// Resolver turns inputs into routes. It is immutable and safe for concurrent use.
type Resolver struct {
	cfg   Config
	links map[string]string // "channel:peer" -> canonical
}

// NewResolver validates cfg and builds a Resolver. DefaultAgent defaults to
// "main", DMScope to per-channel-peer, MainKey to "main".
func NewResolver(cfg Config) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	if cfg.DefaultAgent == "" {
		cfg.DefaultAgent = "main"
	}
	if cfg.DMScope == "" {
		cfg.DMScope = ScopePerChannelPeer
	}
	if cfg.MainKey == "" {
		cfg.MainKey = "main"
	}
	r := &Resolver{cfg: cfg, links: map[string]string{}}
	for canon, aliases := range cfg.IdentityLinks {
		for _, a := range aliases {
			ch, id, ok := strings.Cut(strings.TrimSpace(a), ":")
			if !ok {
				ch, id = "*", ch
			}
			r.links[strings.ToLower(ch)+":"+strings.TrimSpace(id)] = strings.TrimSpace(canon)
		}
	}
	for i := range r.cfg.Bindings {
		m := &r.cfg.Bindings[i].Match
		m.Channel = strings.ToLower(strings.TrimSpace(m.Channel))
		m.AccountID = canonicalAccount(m.AccountID)
		m.GuildID = strings.TrimSpace(m.GuildID)
		if m.Peer != nil {
			p := *m.Peer
			p.ID = strings.TrimSpace(p.ID)
			m.Peer = &p
		}
	}
	return r, nil
}

// defaultAccount is the account id a binding without accountId matches.
const defaultAccount = "default"

// canonicalAccount trims and lower-cases an account id ("" stays "", the
// binding's "default account only").
func canonicalAccount(id string) string {
	return strings.ToLower(strings.TrimSpace(id))
}

// Route is where a message goes.
type Route struct {
	AgentID string
	Key     Key
	// ParentKey is the key without the thread suffix (equal to Key if none).
	ParentKey Key
	// Binding describes the binding that chose the agent ("default" if none).
	Binding string
}

// Agent picks the agent for in: the most specific binding wins (exact
// peer, then a peer wildcard of the kind, then guild, then account, then
// channel), else the default agent. A binding without accountId matches
// the default account only; "*" matches every account.
func (r *Resolver) Agent(in Input) (string, string) {
	best, bestScore, bestDesc := "", 0, "default"
	acct := canonicalAccount(in.AccountID)
	if acct == "" {
		acct = defaultAccount
	}
	peerID := strings.TrimSpace(in.PeerID)
	for i, b := range r.cfg.Bindings {
		m := b.Match
		if m.Channel != "" && m.Channel != strings.ToLower(in.Channel) {
			continue
		}
		score := 1
		switch m.AccountID {
		case "*":
		case "":
			if acct != defaultAccount {
				continue
			}
		default:
			if m.AccountID != acct {
				continue
			}
			score = 2
		}
		if m.GuildID != "" {
			if m.GuildID != strings.TrimSpace(in.GuildID) {
				continue
			}
			score = 3
		}
		if m.Peer != nil {
			if m.Peer.Kind != in.Kind {
				continue
			}
			switch {
			case m.Peer.ID == "*":
				score = 4
			case peerEqual(m.Peer.ID, peerID, in.CaseSensitive):
				score = 5
			default:
				continue
			}
		}
		if m.Channel == "" && score == 1 {
			score = 0 // a catch-all binding is as weak as the default, but still counts
		}
		if best == "" || score > bestScore {
			best, bestScore, bestDesc = strings.ToLower(b.AgentID), score, fmt.Sprintf("bindings[%d]", i)
		}
	}
	if best == "" {
		return r.cfg.DefaultAgent, bestDesc
	}
	return best, bestDesc
}

func peerEqual(a, b string, caseSensitive bool) bool {
	if caseSensitive {
		return a == b
	}
	return strings.EqualFold(a, b)
}

// Resolve returns the agent and session key for in.
func (r *Resolver) Resolve(in Input) (Route, error) {
	if in.Channel == "" {
		return Route{}, fmt.Errorf("routing: resolve: %w: channel", ErrEmptyID)
	}
	in.PeerID, in.ThreadID, in.GuildID = strings.TrimSpace(in.PeerID), strings.TrimSpace(in.ThreadID), strings.TrimSpace(in.GuildID)
	if in.PeerID == "" {
		return Route{}, fmt.Errorf("routing: resolve: %w: peer id", ErrEmptyID)
	}
	agent, desc := r.Agent(in)
	peer := in.PeerID
	if !in.CaseSensitive {
		peer = strings.ToLower(peer)
	}
	var (
		k   Key
		err error
	)
	switch {
	case r.cfg.DMScope == ScopeGlobal && (in.Kind == Direct || in.Kind == Group || in.Kind == Channel):
		k, err = MainKey(agent, r.cfg.MainKey)
	case in.Kind == Direct:
		if canon, ok := r.links[strings.ToLower(in.Channel)+":"+in.PeerID]; ok {
			peer = canon
		} else if canon, ok := r.links["*:"+in.PeerID]; ok {
			peer = canon
		}
		switch r.cfg.DMScope {
		case ScopeMain:
			k, err = MainKey(agent, r.cfg.MainKey)
		case ScopePerPeer:
			k, err = PeerKey(agent, "", "", Direct, peer)
		case ScopePerAccountChannelPeer:
			acct := in.AccountID
			if acct == "" {
				acct = "default"
			}
			k, err = PeerKey(agent, in.Channel, acct, Direct, peer)
		default:
			k, err = PeerKey(agent, in.Channel, "", Direct, peer)
		}
	case in.Kind == Group || in.Kind == Channel:
		k, err = PeerKey(agent, in.Channel, "", in.Kind, peer)
	default:
		return Route{}, fmt.Errorf("routing: resolve: peer kind %q: want direct, group or channel", in.Kind)
	}
	if err != nil {
		return Route{}, fmt.Errorf("routing: resolve: %w", err)
	}
	parent := k
	if in.ThreadID != "" {
		tk := in.ThreadKind
		if tk == "" || k.IsMain() {
			tk = Thread // seed 002: agent:main:main:thread:<id>, for a DM topic too
		}
		if k, err = k.WithThread(tk, in.ThreadID); err != nil {
			return Route{}, fmt.Errorf("routing: resolve: %w", err)
		}
	}
	return Route{AgentID: agent, Key: k, ParentKey: parent, Binding: desc}, nil
}
