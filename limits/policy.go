package limits

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// policy is a Config checked and compiled; it is immutable (SetConfig
// swaps it).
type policy struct {
	loc            *time.Location
	resetH, resetM int
	noticeEvery    time.Duration
	exempt         idSet
	defaults       compiledSet
	agents         map[string]compiledSet
	budgets        bool                // some scope of some agent has a budget: turns are charged
	estimate       sessions.LimitTotal // a turn's hold before its cost is known
}

type compiledSet struct {
	sender, room, agent compiledScope
}

func (s compiledSet) scope(sc string) compiledScope {
	switch sc {
	case ScopeSender:
		return s.sender
	case ScopeRoom:
		return s.room
	}
	return s.agent
}

// idSet holds "channel:id" entries and bare ids (any channel).
type idSet struct {
	pairs map[string]struct{}
	bare  map[string]struct{}
}

// An entry is read as package access reads commands.owners: a prefix
// before ":" is a channel only when it is letters ("addr-2001:db8::" is a
// bare id), and a Discord mention "<@42>" or "<@!42>" names 42.
func newIDSet(lists ...[]string) idSet {
	s := idSet{pairs: map[string]struct{}{}, bare: map[string]struct{}{}}
	for _, l := range lists {
		for _, e := range l {
			e = strings.TrimSpace(e)
			ch, id, ok := strings.Cut(e, ":")
			if !ok || !isLetters(ch) {
				ch, id = "", e
			}
			id = strings.TrimSpace(id)
			if strings.HasPrefix(id, "<@") && strings.HasSuffix(id, ">") {
				id = strings.TrimPrefix(strings.TrimSuffix(id[2:], ">"), "!")
			}
			switch {
			case id == "":
			case strings.EqualFold(ch, "tg"): // Telegram's short name, as access reads it
				s.pairs["telegram:"+id] = struct{}{}
			case ch != "":
				s.pairs[strings.ToLower(ch)+":"+id] = struct{}{}
			default:
				s.bare[id] = struct{}{}
			}
		}
	}
	return s
}

func isLetters(s string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return s != ""
}

func (s idSet) has(channel, id string) bool {
	if id == "" {
		return false
	}
	if _, ok := s.bare[id]; ok {
		return true
	}
	_, ok := s.pairs[channel+":"+id]
	return ok
}

// compile checks c and builds its policy; owners are commands.owners,
// exempt when c.ExemptOwners.
func compile(c Config, owners []string) (*policy, error) {
	const path = "limits"
	p := &policy{agents: map[string]compiledSet{}, noticeEvery: c.NoticeEvery}
	tz := c.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || strings.EqualFold(tz, "local") {
		return nil, fmt.Errorf("%s.timezone: %q is not an IANA time zone such as Europe/Berlin or UTC", path, c.Timezone)
	}
	p.loc = loc
	at := c.ResetAt
	if at == "" {
		at = "00:00"
	}
	if p.resetH, p.resetM, err = parseClock(at); err != nil {
		return nil, fmt.Errorf("%s.resetAt: %w", path, err)
	}
	switch {
	case c.NoticeEvery == 0:
		p.noticeEvery = DefaultNoticeEvery
	case c.NoticeEvery < time.Second || c.NoticeEvery > 24*time.Hour:
		return nil, fmt.Errorf("%s.noticeEvery: %s is not between 1s and 24h", path, c.NoticeEvery)
	}
	est := c.TurnEstimate
	if est.Tokens < 0 || est.Tokens > 100_000_000 {
		return nil, fmt.Errorf("%s.turnEstimate.tokens: %d is not between 0 and 100000000", path, est.Tokens)
	}
	if est.CostUSD < 0 || est.CostUSD > 1_000_000 || math.IsNaN(est.CostUSD) {
		return nil, fmt.Errorf("%s.turnEstimate.costUsd: %v is not between 0 and 1000000", path, est.CostUSD)
	}
	if est.Tokens == 0 {
		est.Tokens = DefaultTurnEstimate.Tokens
	}
	if est.CostUSD == 0 {
		est.CostUSD = DefaultTurnEstimate.CostUSD
	}
	p.estimate = sessions.LimitTotal{Tokens: est.Tokens, CostUSD: est.CostUSD}
	for i, e := range c.Exempt {
		ch, id, ok := strings.Cut(strings.TrimSpace(e), ":")
		if strings.TrimSpace(e) == "" || strings.ContainsAny(e, " \t") || ok && (ch == "" || id == "") {
			return nil, fmt.Errorf("%s.exempt[%d]: %q is not a sender id (\"telegram:123\" or a bare id)", path, i, e)
		}
	}
	p.exempt = newIDSet(c.Exempt)
	if c.ExemptOwners {
		p.exempt = newIDSet(c.Exempt, owners)
	}
	if p.defaults, err = compileSet(path+".defaults", c.Defaults, compiledSet{}); err != nil {
		return nil, err
	}
	p.budgets = p.defaults.sender.budgets() || p.defaults.room.budgets() || p.defaults.agent.budgets()
	for id, s := range c.Agents {
		norm := strings.ToLower(id)
		if !routing.ValidID(norm) {
			return nil, fmt.Errorf("%s.agents.%s: not a valid agent id", path, id)
		}
		cs, err := compileSet(path+".agents."+id, s, p.defaults)
		if err != nil {
			return nil, err
		}
		p.agents[norm] = cs
		p.budgets = p.budgets || cs.sender.budgets() || cs.room.budgets() || cs.agent.budgets()
	}
	return p, nil
}

// compileSet compiles s; a block s leaves unset takes base's.
func compileSet(path string, s Set, base compiledSet) (compiledSet, error) {
	out := base
	for _, b := range []struct {
		name string
		v    Scope
		dst  *compiledScope
	}{{"sender", s.Sender, &out.sender}, {"room", s.Room, &out.room}, {"agent", s.Agent, &out.agent}} {
		if b.v.zero() {
			continue
		}
		cs, err := compileScope(path+"."+b.name, b.v)
		if err != nil {
			return out, err
		}
		*b.dst = cs
	}
	return out, nil
}

// set returns agentID's limits.
func (p *policy) set(agentID string) compiledSet {
	if s, ok := p.agents[agentID]; ok {
		return s
	}
	return p.defaults
}
