// Package web is the HTTP/web channel (SPEC §6, §7): POST
// /api/agents/{id}/chat turns a JSON request into a channels.Inbound and
// streams the reply back as server-sent events (turn, delta, tool, error,
// done), each with an id; GET /api/agents/{id}/chat/turns/{turn} lets a
// client whose stream dropped reconnect with Last-Event-ID and get the rest
// (resume.go), or the finished reply from durable state after a restart.
//
// Each request's turn is logged in memory (turns.go) from its acceptance
// until a while after its reply, matched by the inbound message id; the
// turn's deltas, tool calls and reply are appended to the log and every
// stream reading it (the request's own, reconnected ones) follows it, so a
// slow or gone client never stalls a run. Nothing is kept per idle
// conversation. The adapter is safe for concurrent use.
package web
