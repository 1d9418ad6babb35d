package archtest

import (
	"slices"
	"strings"
)

// A depRule forbids the packages it applies to from reaching some others,
// directly or through any chain of production imports (tailscale
// tstest/deptest). Every rule carries the reason printed when it fails.
type depRule struct {
	name   string
	from   func(pkg string) bool
	forbid func(from, to string) bool
	reason string
}

// leaf lists the internal utility packages any package may import: each
// imports no other project package (its own rule). One copy of a routine
// every layer needs (issue 12: the atomic file write existed four times)
// bends no layering rule because it depends on nothing.
//
// internal/pairstate is the pairing storage contract (types, the State
// interface, the files implementation): sessions names it as its seam's
// PairingState and access keeps the rules over it. It sits below both so
// that access reaches no storage layer (rule access).
//
// internal/jsonenc is the one hand-written JSON string encoder of the
// reflection-free hot paths (the transcript's lines, the model request).
var leaf = map[string]bool{"internal/atomicfile": true, "internal/secret": true, "internal/pairstate": true, "internal/jsonenc": true}

// conformance is the suite every backend of the storage seam passes
// (STYLE 17): test-only code, so production may not import it (rule
// no-fakes), and it reaches sessions' interfaces, never a backend.
const conformance = "sessions/sessionstest"

// backends are the storage backends below the seam (SPEC §3.8), each in
// its own package beside the others (STYLE 17): the files backend, the
// SQLite one and the PostgreSQL one.
var backends = []string{"sessions/filestore", "sessions/sqlitestore", "sessions/pgstore"}

// engine is the transcript engine the backends share: the writing of the
// wire format (so both store the same bytes), the JSONL file the files
// backend writes under its locks, the chain the PostgreSQL backend
// resolves over rows, the context rebuild both answer with. It is
// machinery below the seam, not part of it: it imports sessions (the
// message types, the interfaces it implements), so sessions cannot import
// it; it serves every backend, so it imports none (rule engine); and above
// the seam a transcript is a sessions.TranscriptLog handed out by a
// backend, so nothing there imports it (rule above-seam).
const engine = "sessions/transcript"

// transferPkg moves a stored state between backends (`gateway storage
// migrate`): it sits beside the seam, not below it. It imports sessions and
// works only through the seam's interfaces (Exporter, Importer, Delivery,
// PairingState, Cursors, RoomLog, UsageLog), so it never imports a backend
// or the engine (rule seam) and serves any pair of backends. It is not the
// daemon's work: a running daemon has one backend and never copies state,
// so only the CLI that opens two backends (cmd/gateway) and the seam's
// conformance suite (which checks a UsageLog copies) import it (rule
// transfer).
const transferPkg = "sessions/transfer"

// transferUsers are the production packages that may import transferPkg.
var transferUsers = []string{"cmd/gateway", conformance}

// usagePkg reports from the usage ledger and refills it (`gateway usage`,
// GET /api/usage, the chat's /usage, `gateway usage rebuild`). Like
// transferPkg it sits beside the seam, above it: it works through the
// seam's UsageLog and Backend, so it imports only sessions and routing
// and never a backend or the engine (rules usagereport, seam). The
// ledger's own rules (what a row is, the order of buckets) stay in
// sessions, so the backends, which implement the ledger, need nothing of
// it (rule usage-above).
const usagePkg = "sessions/usagereport"

// searchPkg is how the transcript search sees text (its words, its
// snippets): both backends build their Searcher on it, and sessions itself
// checks with it that a query has words (SearchQuery.Normalize). The
// contract imports it, so it imports no other project package (rule
// searchtext), and every importer of sessions reaches it: like the
// contract's rules, it is shared by everyone.
const searchPkg = "sessions/searchtext"

// isContract reports sessions and what it imports of its own tree
// (searchPkg): whoever imports the contract reaches both.
func isContract(pkg string) bool { return pkg == "sessions" || under(pkg, searchPkg) }

// besideSeam reports the packages under sessions/ that are built on the
// seam rather than part of it: each has its own import rule instead of
// sessions' (which admits only routing).
func besideSeam(pkg string) bool {
	return pkg == conformance || under(pkg, transferPkg) || under(pkg, usagePkg)
}

// belowSeam reports the packages under the seam: the backends and the
// engine they share.
func belowSeam(pkg string) bool { return isBackend(pkg) || under(pkg, engine) }

func isBackend(pkg string) bool {
	for _, b := range backends {
		if under(pkg, b) {
			return true
		}
	}
	return false
}

// backendOf returns the backend tree pkg belongs to, or "".
func backendOf(pkg string) string {
	for _, b := range backends {
		if under(pkg, b) {
			return b
		}
	}
	return ""
}

func under(dir, prefix string) bool { return dir == prefix || strings.HasPrefix(dir, prefix+"/") }

// adapter names the channel adapter a package belongs to ("telegram" for
// channels/telegram/telegramtest), or "" outside channels/<adapter>.
func adapter(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "channels/")
	if !ok {
		return ""
	}
	return strings.SplitN(rest, "/", 2)[0]
}

// isTestPkg reports a package that exists to serve tests: fakes and
// harnesses (telegramtest, openaitest, webtest) whose last path element
// ends in "test".
func isTestPkg(pkg string) bool {
	return strings.HasSuffix(pkg[strings.LastIndexByte(pkg, '/')+1:], "test")
}

// only returns a forbid function admitting just the leaf packages and the
// given trees.
func only(allowed ...string) func(from, to string) bool {
	return func(from, to string) bool {
		if leaf[to] || under(to, from) {
			return false
		}
		for _, a := range allowed {
			if under(to, a) {
				return false
			}
		}
		return true
	}
}

func pkgIs(prefix string) func(string) bool {
	return func(pkg string) bool { return under(pkg, prefix) }
}

func reaches(prefixes ...string) func(from, to string) bool {
	return func(from, to string) bool {
		for _, p := range prefixes {
			if under(to, p) {
				return true
			}
		}
		return false
	}
}

// benchPkg is the load generator: it drives the daemon with the fake
// Telegram and LLM servers, so it may import *test packages (issue 12:
// it reuses telegramtest and openaitest instead of its own fakes). It is a
// main package: nothing can import it, so the fakes never reach the daemon.
const benchPkg = "cmd/gateway-bench"

// ocgenPkg generates the OpenClaw fixture (issue 28): it runs the real
// OpenClaw against the fake Telegram and model servers. Like benchPkg it is
// a main package, so the fakes it imports never reach the daemon.
const ocgenPkg = "internal/ocfixture/ocgen"

// assembler is the package that builds the daemon from the config (issue
// 12: one place assembles the process for main, the end-to-end tests and
// webtest).
const assembler = "gatewayd"

// daemonHarness starts the whole daemon in-process for the browser and API
// tests: it builds it through the assembler from a config, as main does.
const daemonHarness = "internal/webtest"

// backendPickers are the packages that choose a storage backend and so may
// import one: the assembler opens the configured backend, cmd/gateway's
// storage commands (migrate, doctor) open the backends they are named, the
// load generator and the daemon harness build the daemon through the
// assembler. Tests may import a backend too (test files are not in the
// graph): each backend's conformance run and the tests that need a real
// store on disk.
var backendPickers = []string{assembler, "cmd/gateway", benchPkg, daemonHarness}

func picksBackend(pkg string) bool { return slices.Contains(backendPickers, pkg) }

// rules are SPEC §1 (held transitively: a package may not reach through
// another what it may not import) plus the rules of issue 12.
var rules = []depRule{
	{"leaf", func(p string) bool { return leaf[p] }, only(),
		"a leaf utility package imports no other project package, so every layer may use it"},
	{"routing", pkgIs("routing"), only(),
		"routing imports no other project package (SPEC §1): keys are built and parsed in one place"},
	{"lanes", pkgIs("lanes"), only(),
		"lanes imports no other project package (SPEC §1): a generic per-key scheduler"},
	{"sessions", func(p string) bool {
		return under(p, "sessions") && !belowSeam(p) && !besideSeam(p)
	}, only("routing"),
		"sessions imports only routing (SPEC §1): durable state knows keys, not channels or agents"},
	{"transfer", pkgIs(transferPkg), only("sessions", "routing"),
		"the transfer between backends (" + transferPkg + ") imports only sessions (the seam's interfaces it copies through) and routing: it knows no backend, channel or agent"},
	{"transfer-users", func(p string) bool { return !under(p, transferPkg) && !slices.Contains(transferUsers, p) }, reaches(transferPkg),
		"moving a state between backends (" + transferPkg + ") is the CLI's job (`gateway storage migrate`), not the daemon's: a running daemon has one backend, " +
			"so only " + strings.Join(transferUsers, " and ") + " import it"},
	{"searchtext", pkgIs(searchPkg), only(),
		"the search's text rules (" + searchPkg + ") import no other project package: sessions imports them (a query must have words), so they sit below the contract with nothing under them"},
	{"usagereport", pkgIs(usagePkg), func(from, to string) bool { return !isContract(to) && only("routing")(from, to) },
		"usage reports and the ledger's rebuild (" + usagePkg + ") import only sessions (the UsageLog and Backend they work through), routing and leaf packages: they know no backend, channel or agent"},
	{"usage-above", func(p string) bool { return p == "sessions" || belowSeam(p) }, reaches(usagePkg),
		"the seam and the backends below it never import " + usagePkg + ": it is built on sessions.UsageLog from above, and the rules a backend applies to its ledger (CheckUsageRow, CheckUsageFilter, SortUsage) live in sessions"},
	{"conformance", func(p string) bool { return p == conformance }, only("sessions", "routing"),
		"the seam's conformance suite tests sessions' interfaces and nothing above them; each backend's tests hand it an opener, so it never imports a backend (rule seam)"},
	{"seam", func(p string) bool { return under(p, "sessions") && !belowSeam(p) }, func(from, to string) bool { return belowSeam(to) },
		"sessions owns the storage seam (SPEC §3.8) and never imports a backend or the engine they share (" + engine + "): backends import sessions, not the reverse"},
	{"engine", pkgIs(engine), func(from, to string) bool { return isBackend(to) || only("sessions", "routing")(from, to) },
		"the transcript engine (" + engine + ") is machinery the storage backends share: it imports sessions (the message types it writes and reads, the interfaces it implements), " +
			"routing and leaf packages, never a backend (it serves them all) nor a layer above the seam"},
	{"backends", isBackend, only("sessions", "routing"),
		"a storage backend implements the seam sessions owns: it imports sessions (and the transcript engine the backends share), routing and leaf packages, never a layer above the seam"},
	{"backend-isolation", isBackend, func(from, to string) bool { return isBackend(to) && backendOf(to) != backendOf(from) },
		"storage backends never import each other (like adapters): each implements the seam on its own, a rule both need lives in sessions and machinery both need in " + engine},
	{"above-seam", func(p string) bool { return !belowSeam(p) && !picksBackend(p) }, func(from, to string) bool { return belowSeam(to) },
		"everything above the seam (dispatch, agents, api, access, channels, limits, the seam and its suite) reaches durable state only through " +
			"the seam's interfaces (sessions.Backend, SPEC §3.8), never a backend or the transcript engine the backends share: " +
			"the assembler opens the configured backend and hands it in, so no part depends on one backend; only " + strings.Join(backendPickers, ", ") + " pick one"},
	{"channels", pkgIs("channels"), reaches("sessions", "agents", "lanes"),
		"channels never import sessions, agents or lanes (SPEC §1): adapters only move messages"},
	{"adapters", func(p string) bool { return adapter(p) != "" },
		func(from, to string) bool { return adapter(to) != "" && adapter(to) != adapter(from) },
		"channel adapters never import each other (SPEC §1)"},
	{"agents", pkgIs("agents"), reaches("channels", "lanes"),
		"agents never imports channels or lanes (SPEC §1): a run is channel-agnostic"},
	{"channels-access", pkgIs("channels"), reaches("access"),
		"channels and their adapters never import access (issue 20): the policy has one owner, the assembler, which hands each adapter " +
			"the few answers it needs (MentionRequired, SlashAllowed, Room) as functions over the policy in force, so hot reload reaches " +
			"adapters through them and an adapter's config holds only platform keys (configs composes each account with its access rules)"},
	{"access", pkgIs("access"), func(from, to string) bool { return to != "channels" && only("routing")(from, to) },
		"access imports only channels (not an adapter), routing and leaf packages: it judges a channels.Inbound and knows no adapter, dispatcher or store"},
	{"dispatch", pkgIs("dispatch"), reaches("api", "configs", "cmd"),
		"dispatch never imports api, configs or cmd/*: it gets its settings as typed options from main"},
	{"api", pkgIs("api"), func(from, to string) bool { return adapter(to) != "" },
		"api never imports a channel adapter: the web chat is handed in as an api.ChatHandler"},
	{"configs", func(p string) bool {
		return !under(p, "cmd") && !under(p, "configs") && !under(p, assembler) && p != daemonHarness
	}, reaches("configs"),
		"nothing but cmd/*, " + assembler + " and " + daemonHarness + " imports configs: each package owns its typed config; " +
			assembler + " translates it into the parts' options, and the harness that starts the whole daemon " +
			"configures it as an operator does (STYLE 5)"},
	{"assembly", func(p string) bool {
		for _, part := range []string{"dispatch", "sessions", "channels", "agents", "api", "access", "routing", "lanes", "limits"} {
			if under(p, part) {
				return true
			}
		}
		return false
	}, reaches(assembler),
		"the parts never import " + assembler + ": it assembles them, and each gets what it needs handed in as options"},
	{"limits", pkgIs("limits"), only("sessions", "routing"),
		"limits imports only sessions (the seam's counter interface) and routing: dispatch hands it plain subjects, so it knows no channel, agent or backend"},
	{"no-fakes", func(p string) bool { return !isTestPkg(p) && p != benchPkg && p != ocgenPkg },
		func(from, to string) bool { return isTestPkg(to) },
		"production code never imports a *test package (fakes and harnesses); only tests, " + benchPkg + " and " + ocgenPkg + " do"},
}

// rule returns the reasons a production package from may not reach to
// (directly or transitively), joined by "; ", or "" when it may.
func rule(from, to string) string {
	var why []string
	for _, r := range rules {
		if from != to && r.from(from) && r.forbid(from, to) {
			why = append(why, r.name+": "+r.reason)
		}
	}
	return strings.Join(why, "; ")
}
