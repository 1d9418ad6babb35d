// Package gatewayd owns process assembly, lifecycle and hot reload of the
// gateway daemon: New builds one Daemon from a loaded config and Options,
// and Run wires the state directory (secured and locked), the storage
// backend the config's storage section selects (OpenBackend, shared with
// the CLI: the files backend, or postgres assembled in storage_postgres.go,
// the one file that reaches a backend package), the providers and agent
// runner, the
// dispatcher with its lanes, the access policy, the channel adapters and
// the HTTP API, serves until its context ends and shuts down gracefully.
//
// What the daemon knows about each channel (web, telegram, discord) is one
// row of the channel table (channeltable.go): its accounts in the config,
// how an account's adapter is built, the account's access rules and media
// cap, what hot reload applies and what needs a restart, the leader role
// and the webhook an adapter needs. Assembly, the runtime, reload and the
// leader roles read the rows; adding a channel is adding a row.
//
// On a backend several replicas share (postgres), Telegram long polling and
// each Discord gateway connection run only while this replica holds the
// bot account's leader role (leader.go), and /metrics adds the replica's
// id, the leases it holds and the lag of unclaimed ingress, read from the
// database at each scrape (storage_postgres_metrics.go).
//
// Daemon.Status (status.go) gathers what `gateway status` and GET
// /api/status show from where it lives: the adapters' connections, the
// providers' breakers, the MCP manager, the dispatcher and its lanes, the
// journal, the backend and, on a shared database, the replicas.
//
// It is the one place the daemon is assembled: cmd/gateway's `run`, the
// end-to-end tests and internal/webtest all build the process through it
// (the benchmark, cmd/gateway-bench, runs the built binary). Nothing it
// wires imports it; each part gets its settings as typed options. The
// access policy in force is its own: channel adapters get the answers they
// need of it (mention gating, where to offer slash commands, room
// settings) as functions that read the current policy, so a reload reaches
// them without their importing access.
//
// Concurrency: Run owns every goroutine it starts (adapters, HTTP server,
// config watcher, media pruning, profiler) and waits for all of them before
// it returns. Hot reload (a change of the config file or SIGHUP) swaps the
// hot-reloadable runtime while messages flow; keys that need a restart are
// logged by name. A Daemon runs once.
package gatewayd
