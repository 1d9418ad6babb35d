package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestTypoAgentIsAnError: an agent id that no config lists and nothing
// stores (a typo) makes every command that takes one exit 2 naming the
// known agents, instead of an empty answer with exit 0; reading never
// leaves a store directory for it behind, writing never stores a note
// for it. An agent removed from the config whose notes remain still
// answers.
func TestTypoAgentIsAnError(t *testing.T) {
	stateDir := t.TempDir()
	cfg := writeConfig(t, stateDir, "", "")
	keys := seed(t, stateDir, time.Now(), []string{"hello there"})
	typoDir := filepath.Join(stateDir, "agents", "mian")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"sessions", "list", "--agent", "mian"}, 2},
		{[]string{"sessions", "list", "--agent", "mian", "--json"}, 2},
		{[]string{"sessions", "search", "hello", "--agent", "mian"}, 2},
		{[]string{"usage", "--agent", "mian"}, 2},
		{[]string{"usage", "rebuild", "--agent", "mian"}, 2},
		{[]string{"memory", "list", "--agent", "mian"}, 2},
		{[]string{"memory", "show", "mian/agent"}, 2},
		{[]string{"memory", "edit", "mian/agent", "new", "ships on Fridays"}, 2},
		{[]string{"memory", "forget", "mian/sender/telegram:42"}, 2},
		{[]string{"sessions", "show", "agent:mian:web:direct:peer-0"}, 1},
		{[]string{"sessions", "reset", "agent:mian:web:direct:peer-0"}, 1},
	} {
		r := gw(t, cfg, c.args...)
		if r.Code != c.code || !strings.Contains(r.Stderr, "mian") || !strings.Contains(r.Stderr, "agents: main") {
			t.Errorf("gateway %v: exit %d, stderr %q; want %d naming mian and the agents", c.args, r.Code, r.Stderr, c.code)
		}
		if _, err := os.Stat(typoDir); err == nil {
			t.Errorf("gateway %v left %s behind", c.args, typoDir)
			must(t, os.RemoveAll(typoDir))
		}
	}
	if r := gw(t, cfg, "memory", "list").want(t, 0); strings.Contains(r.Stdout, "mian") {
		t.Errorf("a note was stored for the typo:\n%s", r.Stdout)
	}

	// The right id, in any case, answers.
	if r := gw(t, cfg, "sessions", "list", "--agent", "MAIN").want(t, 0); !strings.Contains(r.Stdout, keys[0].String()) {
		t.Errorf("sessions list --agent MAIN:\n%s", r.Stdout)
	}
	gw(t, cfg, "sessions", "search", "hello", "--agent", "main").want(t, 0)
	gw(t, cfg, "usage", "--agent", "main").want(t, 0)

	// Notes of an agent no longer configured, without sessions, stay reachable.
	helper := writeConfig(t, stateDir, "", "agents: {list: [{id: helper}]}\n")
	gw(t, helper, "memory", "edit", "helper/agent", "new", "ships on Fridays").want(t, 0)
	for _, args := range [][]string{
		{"memory", "show", "helper/agent"}, {"memory", "list", "--agent", "helper"},
		{"memory", "edit", "helper/agent", "new", "and on Mondays"}, {"memory", "forget", "helper/agent"},
	} {
		gw(t, cfg, args...).want(t, 0)
	}
}

// TestRouteExplicitAgent: `route --agent` answers as the web API does: a
// configured agent in any case routes to it, one the config lacks (the
// API answers 404) exits 2 naming the agents instead of printing a route
// no message can take.
func TestRouteExplicitAgent(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", "agents: {list: [{id: main}, {id: helper}]}\n")
	r := gw(t, cfg, "route", "--channel", "web", "--peer", "x", "--agent", "Helper").want(t, 0)
	if !strings.Contains(r.Stdout, "session key: agent:helper:web:direct:x") {
		t.Errorf("route --agent Helper:\n%s", r.Stdout)
	}
	r = gw(t, cfg, "route", "--channel", "web", "--peer", "x", "--agent", "hepler")
	if r.Code != 2 || !strings.Contains(r.Stderr, "hepler") || !strings.Contains(r.Stderr, "main, helper") {
		t.Errorf("route --agent hepler: exit %d, stdout %q, stderr %q; want 2 naming the agents", r.Code, r.Stdout, r.Stderr)
	}
}

// TestPairingChannelNames: CHANNEL is a channel whose senders pair, in any
// case; a typo exits 2 naming the channels instead of an empty list with
// exit 0, and leaves no file for it in the pairing state.
func TestPairingChannelNames(t *testing.T) {
	state := t.TempDir()
	cfg := writeConfig(t, state, "", "")
	ps, err := access.OpenPairingStore(filepath.Join(state, "pairing"), access.StoreOptions{})
	must(t, err)
	req, _, err := ps.Request("telegram", "default", "4242", "Ada", "4242", false)
	must(t, err)
	for _, args := range [][]string{
		{"pairing", "list", "telegramm"}, {"pairing", "list", "web"}, {"pairing", "approve", "telegramm", req.Code},
		{"pairing", "revoke", "discrod", "default", "4242"},
	} {
		r := gw(t, cfg, args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "telegram, discord") {
			t.Errorf("gateway %v: exit %d, stdout %q, stderr %q; want 2 naming the channels", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(state, "pairing", "*")); slices.ContainsFunc(m, func(p string) bool {
		return strings.Contains(filepath.Base(p), "telegramm") || strings.Contains(filepath.Base(p), "discrod")
	}) {
		t.Errorf("the pairing state holds files of the typos: %v", m)
	}
	if r := gw(t, cfg, "pairing", "list", "Telegram").want(t, 0); !strings.Contains(r.Stdout, req.Code) {
		t.Errorf("pairing list Telegram:\n%s", r.Stdout)
	}
	if r := gw(t, cfg, "pairing", "approve", "TELEGRAM", req.Code).want(t, 0); !strings.Contains(r.Stdout, "approved telegram sender 4242") {
		t.Errorf("approve TELEGRAM: %s", r.Stdout)
	}
}

// TestUsageOfRemovedAgent: the usage ledger keeps the turns of an agent
// the config no longer lists and no session holds; --agent with its id
// answers (exit 0, also for a range without its turns), a typo exits 2.
func TestUsageOfRemovedAgent(t *testing.T) {
	state := t.TempDir()
	cfg := writeConfig(t, state, "", "")
	recordUsage(t, state, sessionstest.UsageFixture()...) // main's and ops's turns
	if r := gw(t, cfg, "usage", "--agent", "ops").want(t, 0); !strings.Contains(r.Stdout, "TOTAL") || strings.Contains(r.Stdout, "TOTAL        0 ") {
		t.Errorf("usage --agent ops:\n%s", r.Stdout)
	}
	gw(t, cfg, "usage", "--agent", "ops", "--since", "1h").want(t, 0)
	if r := gw(t, cfg, "usage", "--agent", "osp"); r.Code != 2 || !strings.Contains(r.Stderr, "no such agent") {
		t.Errorf("usage --agent osp: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
