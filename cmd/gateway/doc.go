// Command gateway is the daemon and its operator CLI (SPEC §8): flags and
// subcommands (cobra), the operator commands and their printing. `gateway
// run` (the default) loads the config and hands it to gatewayd, which
// assembles and runs the daemon (adapters, dispatcher, lanes, agent runner,
// session store, HTTP API, hot reload); the other subcommands inspect and
// repair a state directory.
//
// Each subcommand has its own builder function (sessionsListCmd,
// pairingApproveCmd, ...), in a file of one concern (cli_sessions.go,
// cli_show.go, cli_sessions_mutate.go, cli_pairing.go, cli_route.go, ...).
// A command checks its flags and arguments first, then gets its config and
// storage through one wrapper (cli_env.go): withConfig loads the config,
// withStorage also opens the configured storage passively (beside a running
// daemon) and closes it. The CLI opens storage only there (openSessions,
// and openFiles for `storage migrate`, which takes the daemon's locks
// itself and refuses while a daemon holds them).
package main
