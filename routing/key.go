package routing

import (
	"errors"
	"fmt"
	"strings"
)

// PeerKind says what kind of conversation a peer id names.
type PeerKind string

// Peer kinds. "dm" is the legacy spelling of Direct; Parse reads it as Direct.
const (
	Direct  PeerKind = "direct"
	Group   PeerKind = "group"
	Channel PeerKind = "channel"
)

// ThreadKind says how a conversation is split below its peer.
type ThreadKind string

// Thread kinds: Discord/Slack threads and Telegram forum topics.
const (
	Thread ThreadKind = "thread"
	Topic  ThreadKind = "topic"
)

// ResetType is the reset-policy bucket of a key (SPEC §2, §3.6).
type ResetType string

// Reset types.
const (
	ResetDirect ResetType = "direct"
	ResetGroup  ResetType = "group"
	ResetThread ResetType = "thread"
)

const subagentWord = "subagent"

var reserved = map[string]bool{
	"direct": true, "dm": true, "group": true, "channel": true,
	"thread": true, "topic": true, subagentWord: true, "agent": true,
}

// ErrInvalidKey wraps every Parse failure.
var ErrInvalidKey = errors.New("invalid session key")

// Key is a parsed session key. Exactly one shape is filled:
//   - main:     Agent, Main, optional ThreadKind (Thread only)+Thread
//   - subagent: Agent, Subagent
//   - peer:     Agent, Kind, Peer, and Channel (empty only for a per-peer DM),
//     Account (only for per-account-channel-peer DMs), optional ThreadKind+Thread.
//
// Build keys with the constructors (MainKey, PeerKey, SubagentKey) and
// WithThread; they validate and normalise. The zero Key is invalid.
type Key struct {
	Agent      string
	Main       string
	Subagent   string
	Channel    string
	Account    string
	Kind       PeerKind
	Peer       string
	ThreadKind ThreadKind
	Thread     string
}

// MainKey returns agent:<agent>:<main>.
func MainKey(agent, main string) (Key, error) {
	a, err := NormalizeID(agent)
	if err != nil {
		return Key{}, fmt.Errorf("routing: agent id: %w", err)
	}
	m, err := NormalizeID(main)
	if err != nil {
		return Key{}, fmt.Errorf("routing: main key: %w", err)
	}
	if reserved[m] {
		return Key{}, fmt.Errorf("routing: main key %q is a reserved word", m)
	}
	return Key{Agent: a, Main: m}, nil
}

// SubagentKey returns agent:<agent>:subagent:<id>.
func SubagentKey(agent, id string) (Key, error) {
	a, err := NormalizeID(agent)
	if err != nil {
		return Key{}, fmt.Errorf("routing: agent id: %w", err)
	}
	u, err := NormalizeID(id)
	if err != nil {
		return Key{}, fmt.Errorf("routing: subagent id: %w", err)
	}
	return Key{Agent: a, Subagent: u}, nil
}

// PeerKey returns a conversation key. channel may be empty only for a Direct
// peer (the per-peer DM scope); account may be set only for a Direct peer.
// peer is opaque and kept as given (case included); lower-case it first for
// channels whose ids are case-insensitive.
func PeerKey(agent, channel, account string, kind PeerKind, peer string) (Key, error) {
	a, err := NormalizeID(agent)
	if err != nil {
		return Key{}, fmt.Errorf("routing: agent id: %w", err)
	}
	k := Key{Agent: a, Kind: kind, Peer: peer}
	switch kind {
	case Direct, Group, Channel:
	default:
		return Key{}, fmt.Errorf("routing: peer kind %q: want direct, group or channel", kind)
	}
	if channel != "" {
		c, err := NormalizeID(channel)
		if err != nil {
			return Key{}, fmt.Errorf("routing: channel: %w", err)
		}
		if reserved[c] {
			return Key{}, fmt.Errorf("routing: channel %q is a reserved word", c)
		}
		k.Channel = c
	} else if kind != Direct {
		return Key{}, fmt.Errorf("routing: %s key without a channel", kind)
	}
	if account != "" {
		if kind != Direct || channel == "" {
			return Key{}, fmt.Errorf("routing: account id only belongs in a per-account DM key")
		}
		ac, err := NormalizeID(account)
		if err != nil {
			return Key{}, fmt.Errorf("routing: account id: %w", err)
		}
		if reserved[ac] {
			return Key{}, fmt.Errorf("routing: account %q is a reserved word", ac)
		}
		k.Account = ac
	}
	if err := checkPeer("routing: peer id", peer); err != nil {
		return Key{}, err
	}
	return k, nil
}

// WithThread returns k with a thread or topic suffix. k must be a peer key
// or a main key without a thread; a main key takes only Thread (seed 002:
// agent:main:main:thread:<id>, for a DM thread or topic too).
func (k Key) WithThread(kind ThreadKind, id string) (Key, error) {
	if (k.Peer == "" && k.Main == "") || k.Thread != "" {
		return Key{}, fmt.Errorf("routing: thread suffix on %q: not a plain peer or main key", k.String())
	}
	if kind != Thread && kind != Topic {
		return Key{}, fmt.Errorf("routing: thread kind %q: want thread or topic", kind)
	}
	if k.Main != "" && kind != Thread {
		return Key{}, fmt.Errorf("routing: thread kind %q on main key %q: a main key takes thread", kind, k.String())
	}
	if err := checkPeer("routing: thread id", id); err != nil {
		return Key{}, err
	}
	k.ThreadKind, k.Thread = kind, id
	return k, nil
}

// Parent returns the key without its thread/topic suffix (k itself if none).
func (k Key) Parent() Key {
	k.ThreadKind, k.Thread = "", ""
	return k
}

// IsZero reports whether k is the zero Key.
func (k Key) IsZero() bool { return k == Key{} }

// IsSubagent reports whether k names a subagent session.
func (k Key) IsSubagent() bool { return k.Subagent != "" }

// IsMain reports whether k is an agent's main session.
func (k Key) IsMain() bool { return k.Main != "" }

// ResetType is thread for a thread/topic key, group for group and channel
// keys, direct otherwise (main, DMs, subagents).
func (k Key) ResetType() ResetType {
	switch {
	case k.Thread != "":
		return ResetThread
	case k.Kind == Group || k.Kind == Channel:
		return ResetGroup
	default:
		return ResetDirect
	}
}

// String renders the key; it is the inverse of Parse.
func (k Key) String() string {
	peer, thread := escapePeer(k.Peer), escapePeer(k.Thread)
	var b strings.Builder
	// One allocation: the words, and the separators of the longest form
	// (16 bytes of a subagent key; a peer key has 12, a main thread 15).
	b.Grow(len("agent::subagent:") + len(k.Agent) + len(k.Main) + len(k.Subagent) + len(k.Channel) + len(k.Account) +
		len(k.Kind) + len(peer) + len(k.ThreadKind) + len(thread))
	b.WriteString("agent:")
	b.WriteString(k.Agent)
	switch {
	case k.Main != "":
		b.WriteByte(':')
		b.WriteString(k.Main)
		if k.Thread != "" {
			b.WriteString(":thread:")
			b.WriteString(thread)
		}
	case k.Subagent != "":
		b.WriteString(":subagent:")
		b.WriteString(k.Subagent)
	default:
		if k.Channel != "" {
			b.WriteByte(':')
			b.WriteString(k.Channel)
		}
		if k.Account != "" {
			b.WriteByte(':')
			b.WriteString(k.Account)
		}
		b.WriteByte(':')
		b.WriteString(string(k.Kind))
		b.WriteByte(':')
		b.WriteString(peer)
		if k.Thread != "" {
			b.WriteByte(':')
			b.WriteString(string(k.ThreadKind))
			b.WriteByte(':')
			b.WriteString(thread)
		}
	}
	return b.String()
}

// MarshalText implements encoding.TextMarshaler.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Key) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

// maxKeyLen bounds a key's text: a peer and a thread id of MaxPeerLen
// bytes each, every byte escaped (%XX), four ids and the fixed words.
const maxKeyLen = 2*3*MaxPeerLen + 4*MaxIDLen + 32

// Parse reads a session key. Agent, channel, account and main ids are
// lower-cased; peer and thread ids keep their case. Legacy "dm" reads as
// direct. Invalid input is an error wrapping ErrInvalidKey that says what is
// wrong.
func Parse(s string) (Key, error) {
	bad := func(format string, a ...any) (Key, error) {
		return Key{}, fmt.Errorf("%w %q: %s", ErrInvalidKey, truncate(s), fmt.Sprintf(format, a...))
	}
	if len(s) > maxKeyLen {
		return bad("too long (%d bytes)", len(s))
	}
	parts := strings.Split(s, ":")
	if len(parts) < 3 || strings.ToLower(parts[0]) != "agent" {
		return bad("want agent:<agentId>:...")
	}
	for i, p := range parts {
		if err := checkComponent(i+1, p); err != nil {
			return bad("%v", err)
		}
	}
	lower := func(i int, what string) (string, error) {
		v := strings.ToLower(parts[i])
		if !ValidID(v) {
			return "", fmt.Errorf("%s %q is not a valid id", what, truncate(parts[i]))
		}
		return v, nil
	}
	agent, err := lower(1, "agent id")
	if err != nil {
		return bad("%v", err)
	}
	k := Key{Agent: agent}
	rest := parts[2:]
	head := strings.ToLower(rest[0])
	switch {
	case len(rest) == 1:
		if reserved[head] {
			return bad("%q needs an id after it", head)
		}
		if k.Main, err = lower(2, "main key"); err != nil {
			return bad("%v", err)
		}
		return k, nil
	case len(rest) == 3 && !reserved[head] && strings.ToLower(rest[1]) == string(Thread):
		// agent:<a>:<mainKey>:thread:<id>, a thread of the main session.
		if k.Main, err = lower(2, "main key"); err != nil {
			return bad("%v", err)
		}
		thread, err := unescapePeer(rest[2])
		if err != nil {
			return bad("thread id: %v", err)
		}
		if err := checkPeer("thread id", thread); err != nil {
			return bad("%v", err)
		}
		k.ThreadKind, k.Thread = Thread, thread
		return k, nil
	case head == subagentWord:
		if len(rest) != 2 {
			return bad("subagent key has %d extra components", len(rest)-2)
		}
		if k.Subagent, err = lower(3, "subagent id"); err != nil {
			return bad("%v", err)
		}
		return k, nil
	case head == "direct" || head == "dm":
		k.Kind = Direct
		return parsePeer(s, k, rest[1:])
	}
	if reserved[head] {
		return bad("unexpected %q after the agent id", head)
	}
	if k.Channel, err = lower(2, "channel"); err != nil {
		return bad("%v", err)
	}
	if len(rest) < 3 {
		return bad("channel key needs <kind>:<peerId>")
	}
	switch kind := strings.ToLower(rest[1]); kind {
	case "direct", "dm":
		k.Kind = Direct
		return parsePeer(s, k, rest[2:])
	case "group", "channel":
		k.Kind = PeerKind(kind)
		return parsePeer(s, k, rest[2:])
	}
	if reserved[strings.ToLower(rest[1])] {
		return bad("unexpected %q after the channel", rest[1])
	}
	if k.Account, err = lower(3, "account id"); err != nil {
		return bad("%v", err)
	}
	if len(rest) < 4 {
		return bad("account key needs direct:<peerId>")
	}
	if kind := strings.ToLower(rest[2]); kind != "direct" && kind != "dm" {
		return bad("an account id is only allowed in a direct key, got %q", rest[2])
	}
	k.Kind = Direct
	return parsePeer(s, k, rest[3:])
}

// parsePeer reads <peerId>[:thread|topic:<id>].
func parsePeer(s string, k Key, rest []string) (Key, error) {
	bad := func(format string, a ...any) (Key, error) {
		return Key{}, fmt.Errorf("%w %q: %s", ErrInvalidKey, truncate(s), fmt.Sprintf(format, a...))
	}
	if len(rest) != 1 && len(rest) != 3 {
		return bad("want <peerId> or <peerId>:thread|topic:<id>")
	}
	peer, err := unescapePeer(rest[0])
	if err != nil {
		return bad("peer id: %v", err)
	}
	if err := checkPeer("peer id", peer); err != nil {
		return bad("%v", err)
	}
	k.Peer = peer
	if len(rest) == 3 {
		tk := ThreadKind(strings.ToLower(rest[1]))
		if tk != Thread && tk != Topic {
			return bad("want thread or topic, got %q", rest[1])
		}
		th, err := unescapePeer(rest[2])
		if err != nil {
			return bad("thread id: %v", err)
		}
		if err := checkPeer("thread id", th); err != nil {
			return bad("%v", err)
		}
		k.ThreadKind, k.Thread = tk, th
	}
	return k, nil
}

// Canonical returns k without the fields its String leaves out (a main or
// subagent key's peer fields, a thread kind without a thread), so two keys
// that name one session are equal values: a map or a lane keyed by Key
// then never holds one session twice.
func (k Key) Canonical() Key {
	switch {
	case k.Main != "" && k.Thread != "":
		// A thread of the main session: its own session (String and
		// Parse keep it, as "thread" whatever the kind it was built with).
		return Key{Agent: k.Agent, Main: k.Main, ThreadKind: Thread, Thread: k.Thread}
	case k.Main != "":
		return Key{Agent: k.Agent, Main: k.Main}
	case k.Subagent != "":
		return Key{Agent: k.Agent, Subagent: k.Subagent}
	}
	if k.Thread == "" {
		k.ThreadKind = ""
	}
	return k
}
