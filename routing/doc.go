// Package routing builds, parses and resolves session keys.
//
// It owns the textual form of a session key (SPEC §2): nobody else splits a
// key on ':'. Key.String and Parse round-trip for every form (main, the four
// DM scopes, group, channel, thread/topic, subagent). Resolver maps a
// normalised inbound message to an agent id and a Key using the configured
// dmScope, identity links and bindings.
//
// routing imports no other package of this project. All values are immutable
// after construction, so a Resolver may be shared by any number of goroutines;
// hot reload swaps a whole Resolver.
package routing
