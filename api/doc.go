// Package api serves the operator HTTP API (SPEC §7): chat over SSE (through
// the web channel), session listing, history, patch, delete, reset and
// compact (a web session's history carries its questions with buttons,
// signed again: questions.go), health and readiness probes, Prometheus metrics and the web page;
// the daemon's status (GET /api/status, status.go) and the dead letters
// (/api/deliveries/failed, deliveries.go).
//
// Every /api route requires the bearer token when one is configured; the
// daemon refuses to listen on a non-loopback address without one. Handlers
// are safe for concurrent use; session changes go through the session's lane
// (Options.Serialise) so they never race a running turn.
package api
