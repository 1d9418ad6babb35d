// Package web is the HTTP/web channel (SPEC §6, §7): POST
// /api/agents/{id}/chat turns a JSON request into a channels.Inbound and
// streams the reply back as server-sent events (delta, error, done).
//
// Each request waits for its own reply, matched by the inbound message id;
// the adapter keeps one small entry per in-flight request and nothing per
// idle conversation. The adapter is safe for concurrent use.
package web
