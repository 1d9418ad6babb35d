package archtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// graph maps a package (repo-relative dir) to its direct project imports.
type graph map[string][]string

// graphOf turns the loaded packages into a graph.
func graphOf(pkgs map[string]*pkgInfo) graph {
	g := graph{}
	for d, p := range pkgs {
		g[d] = []string{} // every package is a node, importing or not
		for imp := range p.imports {
			g[d] = append(g[d], imp)
		}
		slices.Sort(g[d])
	}
	return g
}

// reach returns every package from reaches, each with the import chain
// that gets there first (breadth-first, so the chain is a shortest one).
func (g graph) reach(from string) map[string][]string {
	via := map[string][]string{from: {from}}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p] {
			if _, seen := via[q]; seen {
				continue
			}
			via[q] = append(slices.Clone(via[p]), q)
			queue = append(queue, q)
		}
	}
	delete(via, from)
	return via
}

// violations lists, sorted, every (package, reached package) pair that a
// rule forbids, with the chain and the reason.
func violations(g graph, rule func(from, to string) string) []string {
	var out []string
	for from := range g {
		for to, chain := range g.reach(from) {
			why := rule(from, to)
			if why == "" {
				continue
			}
			how := "imports"
			if len(chain) > 2 {
				how = "reaches (" + strings.Join(chain, " -> ") + ")"
			}
			out = append(out, fmt.Sprintf("%s %s %s: %s", from, how, to, why))
		}
	}
	slices.Sort(out)
	return out
}

// TestImportRules checks every rule over the transitive production import
// graph of the repository (test files excluded: tests may use fakes and
// reach across layers).
func TestImportRules(t *testing.T) {
	g := graphOf(loadPackages(t))
	for _, v := range violations(g, rule) {
		t.Error(v)
	}
	// The rules must see the packages they name: a rename would silently
	// turn a rule off.
	for _, p := range []string{"routing", "lanes", "sessions", "sessions/filestore", "sessions/sqlitestore", "sessions/pgstore", engine, conformance, transferPkg, usagePkg, searchPkg, "channels", "channels/telegram", "channels/discord",
		"channels/web", "agents", "access", "dispatch", "api", "configs", "cmd/gateway", benchPkg, ocgenPkg, assembler, "internal/webtest", "limits"} {
		if _, ok := g[p]; !ok {
			t.Errorf("package %s not found: update the rules in rules_test.go", p)
		}
	}
}

func TestRuleTable(t *testing.T) {
	tests := []struct {
		from, to string
		bad      bool
	}{
		{"routing", "sessions", true},
		{"lanes", "routing", true},
		{"sessions", "routing", false},
		{"sessions", "lanes", true},
		{"channels/telegram", "channels", false},
		{"channels/telegram", "sessions", true},
		{"channels/telegram", "channels/discord", true},
		{"channels/telegram/telegramtest", "channels/telegram", false},
		{"channels/telegram", "access", true},
		{"channels/discord", "access", true},
		{"channels/web", "access", true},
		{"channels/discord/discordtest", "access", true},
		{"channels", "access", true},
		{assembler, "access", false},
		{"configs", "access", false},
		{"agents", "channels", true},
		{"agents/openai", "agents/llm", false},
		{"agents", "lanes", true},
		{"dispatch", "lanes", false},
		{"dispatch", "api", true},
		{"dispatch", "configs", true},
		{"dispatch", "cmd/gateway", true},
		{"sessions", "internal/atomicfile", false},
		{"sessions/pgstore", "sessions", false},
		{"sessions/pgstore", "routing", false},
		{"sessions/pgstore", "internal/secret", false},
		{"sessions/pgstore/pgtest", "sessions", false},
		{"sessions", "sessions/pgstore", true},
		{"sessions", "sessions/filestore", true},
		{"sessions/filestore", "sessions", false},
		{"sessions/filestore", "routing", false},
		{"sessions/filestore", "internal/atomicfile", false},
		{"sessions/filestore", "internal/pairstate", false},
		{"sessions/filestore", "sessions/pgstore", true},
		{engine, "sessions", false},
		{engine, "routing", false},
		{engine, "internal/atomicfile", false},
		{engine, "sessions/filestore", true},
		{engine, "sessions/pgstore", true},
		{engine, conformance, true},
		{engine, "dispatch", true},
		{engine, "lanes", true},
		{"sessions", engine, true},
		{conformance, engine, true},
		{"sessions/filestore", engine, false},
		{"sessions/pgstore", engine, false},
		{"dispatch", engine, true},
		{"agents", engine, true},
		{"api", engine, true},
		{"limits", engine, true},
		{assembler, engine, false},
		{"cmd/gateway", engine, false},
		{"sessions/pgstore", "sessions/filestore", true},
		{"sessions/sqlitestore", "sessions", false},
		{"sessions/sqlitestore", engine, false},
		{"sessions/sqlitestore", searchPkg, false},
		{"sessions", "sessions/sqlitestore", true},
		{"sessions/sqlitestore", "sessions/pgstore", true},
		{"sessions/sqlitestore", "sessions/filestore", true},
		{"sessions/filestore", "sessions/sqlitestore", true},
		{"dispatch", "sessions/sqlitestore", true},
		{assembler, "sessions/sqlitestore", false},
		{"sessions/filestore", "dispatch", true},
		{"sessions/filestore", conformance, true},
		{conformance, "sessions/filestore", true},
		{"dispatch", "sessions/filestore", true},
		{"agents", "sessions/filestore", true},
		{"api", "sessions/filestore", true},
		{"access", "sessions/filestore", true},
		{"limits", "sessions/filestore", true},
		{"channels/web", "sessions/filestore", true},
		{"internal/pairstate", "sessions/filestore", true},
		{"channels/telegram/telegramtest", "sessions/filestore", true},
		{assembler, "sessions/filestore", false},
		{"cmd/gateway", "sessions/filestore", false},
		{benchPkg, "sessions/filestore", false},
		{"internal/webtest", "sessions/filestore", false},
		{"dispatch", "sessions/sessionstest", true},
		{assembler, "sessions/pgstore/pgtest", true},
		{"cmd/gateway", "channels/telegram/telegramtest", true},
		{"gatewayd", "internal/webtest", true},
		{"sessions", "sessions/pgstore/pgtest", true},
		{conformance, "sessions", false},
		{conformance, "routing", false},
		{conformance, "sessions/pgstore", true},
		{conformance, "sessions/pgstore/pgtest", true},
		{conformance, "dispatch", true},
		{"sessions", conformance, true},
		{"limits", "sessions", false},
		{"limits", "dispatch", true},
		{"limits", "channels", true},
		{"limits", "sessions/pgstore", true},
		{"dispatch", "limits", false},
		{"sessions/pgstore", conformance, true},
		{"dispatch", conformance, true},
		{assembler, conformance, true},
		{"sessions/pgstore", "dispatch", true},
		{"sessions/pgstore", "agents", true},
		{"dispatch", "sessions/pgstore/pgtest", true},
		{"dispatch", "sessions/pgstore", true},
		{"agents", "sessions/pgstore", true},
		{"api", "sessions/pgstore", true},
		{"access", "sessions/pgstore", true},
		{"channels/web", "sessions/pgstore", true},
		{"dispatch", "sessions", false},
		{transferPkg, "sessions", false},
		{transferPkg, "routing", false},
		{transferPkg, "internal/pairstate", false},
		{transferPkg, "sessions/filestore", true},
		{transferPkg, "sessions/pgstore", true},
		{transferPkg, engine, true},
		{transferPkg, "dispatch", true},
		{"cmd/gateway", transferPkg, false},
		{conformance, transferPkg, false},
		{"sessions", transferPkg, true},
		{"sessions/filestore", transferPkg, true},
		{"sessions/pgstore", transferPkg, true},
		{assembler, transferPkg, true},
		{"dispatch", transferPkg, true},
		{"api", transferPkg, true},
		{"sessions", searchPkg, false},
		{"sessions/filestore", searchPkg, false},
		{"sessions/pgstore", searchPkg, false},
		{conformance, searchPkg, false},
		{searchPkg, "sessions", true},
		{searchPkg, "routing", true},
		{searchPkg, "internal/atomicfile", false},
		{usagePkg, "sessions", false},
		{usagePkg, searchPkg, false},
		{usagePkg, "routing", false},
		{usagePkg, "sessions/filestore", true},
		{usagePkg, "sessions/pgstore", true},
		{usagePkg, engine, true},
		{usagePkg, "dispatch", true},
		{usagePkg, transferPkg, true},
		{"sessions", usagePkg, true},
		{"sessions/filestore", usagePkg, true},
		{"sessions/pgstore", usagePkg, true},
		{engine, usagePkg, true},
		{"api", usagePkg, false},
		{"dispatch", usagePkg, false},
		{"cmd/gateway", usagePkg, false},
		{conformance, usagePkg, false},
		{assembler, "sessions/pgstore", false},
		{"cmd/gateway", "sessions/pgstore", false},
		{"routing", "internal/atomicfile", false},
		{"internal/atomicfile", "routing", true},
		{"access", "channels", false},
		{"access", "routing", false},
		{"access", "internal/secret", false},
		{"access", "sessions", true},
		{"access", "channels/telegram", true},
		{"access", "dispatch", true},
		{"api", "channels/web", true},
		{"api", "channels/telegram", true},
		{"api", "channels", false},
		{"api", "sessions", false},
		{"cmd/gateway", "configs", false},
		{"configs", "sessions", false},
		{"internal/webtest", "configs", false}, // it builds the daemon through gatewayd
		{"channels/telegram/telegramtest", "configs", true},
		{assembler, "configs", false},
		{assembler, "dispatch", false},
		{"cmd/gateway", assembler, false},
		{"internal/webtest", assembler, false},
		{"dispatch", assembler, true},
		{"sessions", assembler, true},
		{"channels/web", assembler, true},
		{"agents", assembler, true},
		{"api", assembler, true},
		{"access", assembler, true},
		{"dispatch", "configs", true},
		{"cmd/gateway", "channels/telegram/telegramtest", true},
		{"dispatch", "agents/openai/openaitest", true},
		{ocgenPkg, "channels/telegram/telegramtest", false},
		{ocgenPkg, "agents/openai/openaitest", false},
		{"internal/ocfixture", "channels/telegram/telegramtest", true},
		{"channels/telegram", "internal/webtest", true},
		{benchPkg, "channels/telegram/telegramtest", false},
		{benchPkg, "agents/openai/openaitest", false},
		{"internal/webtest", "channels/telegram/telegramtest", false},
	}
	for _, tt := range tests {
		if got := rule(tt.from, tt.to) != ""; got != tt.bad {
			t.Errorf("rule(%s -> %s) forbidden=%v, want %v (%s)", tt.from, tt.to, got, tt.bad, rule(tt.from, tt.to))
		}
	}
}

// TestViolationsTransitive runs the rules over synthetic graphs: a
// forbidden package reached through an allowed one is still a violation,
// and the message names the chain and the reason.
func TestViolationsTransitive(t *testing.T) {
	tests := []struct {
		name string
		g    graph
		want []string // substrings, one per expected violation, in sorted order
	}{
		{"clean", graph{
			"channels/telegram": {"channels"}, "access": {"channels", "internal/atomicfile"}, assembler: {"access", "channels/telegram"},
			"dispatch": {"sessions", "lanes"}, "sessions": {"routing"}, "api": {"agents"}, "agents": {"sessions"},
		}, nil},
		{"channel reaches sessions through access", graph{
			"channels/telegram": {"access"}, "access": {"routing", "sessions"}, "sessions": {"routing"},
		}, []string{
			"access imports sessions: access:",
			"channels/telegram imports access: channels-access:",
			"channels/telegram reaches (channels/telegram -> access -> sessions) sessions: channels:",
		}},
		{"agents reach lanes through a helper", graph{
			"agents": {"agents/llm"}, "agents/llm": {"internal/util"}, "internal/util": {"lanes"},
		}, []string{
			"agents reaches (agents -> agents/llm -> internal/util -> lanes) lanes: agents:",
			"agents/llm reaches (agents/llm -> internal/util -> lanes) lanes: agents:",
		}},
		{"production reaches a fake through a library", graph{
			"dispatch": {"internal/helper"}, "internal/helper": {"channels/telegram/telegramtest"},
			benchPkg: {"channels/telegram/telegramtest"},
		}, []string{
			"dispatch reaches (dispatch -> internal/helper -> channels/telegram/telegramtest) channels/telegram/telegramtest: no-fakes:",
			"internal/helper imports channels/telegram/telegramtest: no-fakes:",
		}},
		{"configs below cmd", graph{
			"cmd/gateway": {"configs", "dispatch"}, "dispatch": {"internal/x"}, "internal/x": {"configs"},
		}, []string{
			"dispatch reaches (dispatch -> internal/x -> configs) configs: dispatch:",
			"internal/x imports configs: configs:",
		}},
		{"a part reaches the assembler", graph{
			"cmd/gateway": {assembler}, assembler: {"api", "configs"}, "api": {"internal/x"}, "internal/x": {assembler},
		}, []string{
			"api reaches (api -> internal/x -> gatewayd -> configs) configs: configs:",
			"api reaches (api -> internal/x -> gatewayd) gatewayd: assembly:",
			"internal/x reaches (internal/x -> gatewayd -> configs) configs: configs:",
		}},
		{"cycle terminates", graph{"routing": {"lanes"}, "lanes": {"routing"}}, []string{
			"lanes imports routing: lanes:", "routing imports lanes: routing:",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.g, rule)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d violations, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
